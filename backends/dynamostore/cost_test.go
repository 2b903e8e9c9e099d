package dynamostore

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

// TestCostPerMillionDo runs first executions and replays, then checks the
// price per million Do against a hand calculation from the capacity units
// the calls consumed: a first execution reads one strongly consistent
// item (1 RCU) and writes three (counter, claim, completion: 1 WCU each at
// this size); a replay reads one.
func TestCostPerMillionDo(t *testing.T) {
	s := newStore(t, Options{})
	e := idem.New(s, idem.WithHeartbeat(-1))
	ctx := context.Background()
	ok := func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 200, Body: []byte("ok")}, nil
	}
	const n = 20
	before := s.Usage()
	for i := range n {
		if _, err := e.Do(ctx, "costm."+string(rune('a'+i)), fp("a"), ok); err != nil {
			t.Fatal(err)
		}
	}
	first := s.Usage().Sub(before)
	if first.ReadUnits != n || first.WriteUnits != 3*n {
		t.Fatalf("%d first executions used %.1f RCU and %.1f WCU; want %d and %d", n, first.ReadUnits, first.WriteUnits, n, 3*n)
	}
	// By hand: 3 WCU × $0.625/M + 1 RCU × $0.125/M = $2.00 per million Do.
	if got := first.PerMillion(n, DefaultPrices); math.Abs(got-2.0) > 1e-9 {
		t.Fatalf("first execution: $%.6f per million Do, want $2.00", got)
	}
	before = s.Usage()
	for i := range n {
		if res, err := e.Do(ctx, "costm."+string(rune('a'+i)), fp("a"), ok); err != nil || !res.Replayed {
			t.Fatalf("replay: %+v, %v", res, err)
		}
	}
	// By hand: 1 RCU × $0.125/M = $0.125 per million replays.
	if got := s.Usage().Sub(before).PerMillion(n, DefaultPrices); math.Abs(got-0.125) > 1e-9 {
		t.Fatalf("replay: $%.6f per million Do, want $0.125", got)
	}
}

func TestLoadPrices(t *testing.T) {
	p, err := LoadPrices(strings.NewReader(`{"region":"eu-west-1","date":"2026-01-01","source":"my contract","write_per_million":0.7,"read_per_million":0.14}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := (Usage{WriteUnits: 3, ReadUnits: 1}).PerMillion(1, p); math.Abs(got-2.24) > 1e-9 {
		t.Fatalf("3 WCU + 1 RCU at %+v: $%v per million, want $2.24", p, got)
	}
	for _, bad := range []string{
		`{"date":"2026-01-01","source":"x","write_per_million":-1}`,
		`{"write_per_million":1,"read_per_million":1}`,
		`{"date":"2026-01-01","source":"x","wcu":1}`,
		`not json`,
	} {
		if _, err := LoadPrices(strings.NewReader(bad)); err == nil {
			t.Errorf("LoadPrices(%s) = nil error", bad)
		}
	}
}

// Package sinktest checks the behaviour every backend sink of the harness
// shares: the recovery lookup fences ("fence, then look") and the ledger
// read back holds exactly the applied effects.
package sinktest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// Sink is a fenced backend sink under test.
type Sink interface {
	workload.LedgerReader
	workload.Recoverer
}

// FenceOnRecover checks that a recovery lookup raises the key's fence to
// the successor's token, so that a stale holder applying after the lookup
// is rejected and only the successor's effect is applied, and that
// ReadLedger returns that one effect.
func FenceOnRecover(t *testing.T, s Sink) {
	t.Helper()
	ctx := context.Background()
	prefix := "sinktest-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	key := prefix + "k"
	effect := func(tok idem.Token, exec string) workload.Effect {
		return workload.Effect{Key: key, Token: tok, Exec: exec, Response: idem.Response{Status: 200, Body: []byte(exec)}}
	}
	if _, done, err := s.Recover(ctx, key, 7); done || err != nil {
		t.Fatalf("recover before any effect: done %t, err %v", done, err)
	}
	if applied, err := s.Apply(ctx, effect(5, "stale")); err != nil || applied {
		t.Fatalf("stale holder (token 5) after the successor's (token 7) lookup: applied %t, err %v; want rejected", applied, err)
	}
	if applied, err := s.Apply(ctx, effect(7, "successor")); err != nil || !applied {
		t.Fatalf("successor: applied %t, err %v", applied, err)
	}
	resp, done, err := s.Recover(ctx, key, 8)
	if err != nil || !done || string(resp.Body) != "successor" {
		t.Fatalf("recover after the successor: %q %t %v", resp.Body, done, err)
	}
	got, err := s.ReadLedger(ctx, prefix, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Exec != "successor" || got[0].Token != 7 || got[0].At <= 0 {
		t.Fatalf("ledger read back: %+v; want the successor's effect alone", got)
	}
	if a, ok := workload.NewLedgerOf(got).Lookup(key, "successor"); !a || !ok {
		t.Fatal("NewLedgerOf does not hold the effect read back")
	}
}

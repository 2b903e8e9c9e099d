package dynamostore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/idem"
)

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Table: "x"},
		{Table: "bad name"},
		{TakeoverGrace: -time.Second},
		{CounterFamilies: -1},
		{CounterFamilies: 1<<20 + 1},
	} {
		if _, err := New(struct{ API }{}, o); err == nil {
			t.Errorf("New(%+v) = nil error", o)
		}
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil client) = nil error")
	}
}

// TestRequestsPerDo pins the request count of each path of Engine.Do:
// a first execution reads, draws a token and claims, then completes; a
// replay and a conflict are answered by the read alone.
func TestRequestsPerDo(t *testing.T) {
	s := newStore(t, Options{})
	e := idem.New(s, idem.WithHeartbeat(-1))
	ctx := context.Background()
	ok := func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 200, Body: []byte("ok")}, nil
	}

	before := s.Usage()
	if _, err := e.Do(ctx, "cost.first", fp("a"), ok); err != nil {
		t.Fatal(err)
	}
	first := s.Usage().Sub(before)
	want := Usage{Gets: 1, Updates: 2, Puts: 1}
	if diff := cmp.Diff(want, first, countsOnly); diff != "" {
		t.Errorf("first execution (-want +got):\n%s", diff)
	}
	if first.WriteUnits < 3 || first.ReadUnits <= 0 {
		t.Errorf("first execution used %.1f write and %.1f read units; want at least 3 and some", first.WriteUnits, first.ReadUnits)
	}

	before = s.Usage()
	res, err := e.Do(ctx, "cost.first", fp("a"), ok)
	if err != nil || !res.Replayed {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	if diff := cmp.Diff(Usage{Gets: 1}, s.Usage().Sub(before), countsOnly); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}

	l := mustAcquire(t, s, "cost.busy", fp("a"), time.Hour)
	before = s.Usage()
	if _, err := e.Do(ctx, "cost.busy", fp("a"), ok); !errors.Is(err, idem.ErrInProgress) {
		t.Fatalf("conflict: %v, want ErrInProgress", err)
	}
	if diff := cmp.Diff(Usage{Gets: 1}, s.Usage().Sub(before), countsOnly); diff != "" {
		t.Errorf("conflict (-want +got):\n%s", diff)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// countsOnly compares request counts, not capacity units.
var countsOnly = cmp.FilterPath(func(p cmp.Path) bool {
	f := p.Last().String()
	return f == ".ReadUnits" || f == ".WriteUnits"
}, cmp.Ignore())

func TestTakeOverSetsPrevToken(t *testing.T) {
	s := newStore(t, Options{})
	l1 := mustAcquire(t, s, "to.k", fp("a"), 50*time.Millisecond)
	time.Sleep(80 * time.Millisecond)
	l2 := mustAcquire(t, s, "to.k", fp("a"), time.Hour)
	if l2.PrevToken != l1.Token || l2.Token <= l1.Token {
		t.Fatalf("take-over lease %+v after %+v: want PrevToken %d and a higher token", l2, l1, l1.Token)
	}
	if err := s.Complete(context.Background(), l1, idem.Response{Status: 200}, time.Hour); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Complete by the old holder: %v, want ErrLeaseLost", err)
	}
}

func TestItemAboveLimitRefused(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	l := mustAcquire(t, s, "big.k", fp("a"), time.Hour)
	big := idem.Response{Status: 200, Body: make([]byte, MaxItemSize)}
	err := s.Complete(ctx, l, big, time.Hour)
	if !errors.Is(err, ErrItemTooLarge) || !errors.Is(err, idem.ErrResponseTooLarge) || !strings.Contains(err.Error(), "limit 409600") {
		t.Fatalf("Complete of a %d-byte body: %v; want ErrItemTooLarge and idem.ErrResponseTooLarge naming the limit", len(big.Body), err)
	}
	if rec, err := s.Get(ctx, "big.k"); err != nil || rec.Status != idem.StatusInProgress {
		t.Fatalf("after the refused Complete: %+v, %v; want the record still in progress", rec, err)
	}
	fits := idem.Response{Status: 200, Header: map[string][]string{"Content-Type": {"application/octet-stream"}}, Body: make([]byte, MaxResponseSize-64)}
	if err := s.Complete(ctx, l, fits, time.Hour); err != nil {
		t.Fatalf("Complete of a response of MaxResponseSize: %v", err)
	}
	sameBody(t, s, "big.k", fits)
}

// TestEngineCapStoresLargeResponseAsFailure: with the engine's cap at
// MaxResponseSize, a larger response is stored as a 500 failure (replayed),
// not left in progress for a retry to run again.
func TestEngineCapStoresLargeResponseAsFailure(t *testing.T) {
	s := newStore(t, Options{})
	e := idem.New(s, idem.WithMaxResponseSize(MaxResponseSize), idem.WithHeartbeat(-1))
	ctx := context.Background()
	runs := 0
	huge := func(context.Context) (idem.Response, error) {
		runs++
		return idem.Response{Status: 200, Body: make([]byte, MaxItemSize+1)}, nil
	}
	if _, err := e.Do(ctx, "cap.k", fp("a"), huge); !errors.Is(err, idem.ErrResponseTooLarge) {
		t.Fatalf("first Do: %v, want ErrResponseTooLarge", err)
	}
	res, err := e.Do(ctx, "cap.k", fp("a"), huge)
	if err != nil || !res.Replayed || !res.Failed || res.Response.Status != 500 || runs != 1 {
		t.Fatalf("retry: %+v, %v, ran %d times; want the stored 500 replayed and one run", res, err, runs)
	}
}

func sameBody(t *testing.T, s *Store, key string, want idem.Response) {
	t.Helper()
	rec, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Response.Equal(&want) {
		t.Fatalf("stored response differs from the one completed (%d vs %d body bytes)", len(rec.Response.Body), len(want.Body))
	}
}

// TestCounterBehindIsMovedPast: a record whose token is at or above its
// family counter (a restored table) is taken over with a token above it,
// the counter is moved forward, never back, and OnCounterBehind is told.
func TestCounterBehindIsMovedPast(t *testing.T) {
	var told []idem.Token
	s := newStore(t, Options{CounterFamilies: 1, OnCounterBehind: func(_ string, counter, token idem.Token) {
		told = append(told, counter, token)
	}})
	ctx := context.Background()
	l := mustAcquire(t, s, "behind.k", fp("a"), time.Hour)
	const restored = 1_000_000
	setAttr(t, s, "behind.k", attrToken, tokAV(restored))
	setAttr(t, s, "behind.k", attrLease, msAV(time.Now().Add(-time.Second)))
	l2 := mustAcquire(t, s, "behind.k", fp("a"), time.Hour)
	if l2.Token <= restored || l2.PrevToken != restored {
		t.Fatalf("take-over of a record with token %d: lease %+v", restored, l2)
	}
	if len(told) != 2 || told[1] != restored || told[0] > restored {
		t.Fatalf("OnCounterBehind told %v; want [counter<=%d %d]", told, restored, restored)
	}
	if c := counterValue(t, s, "behind.k"); c < restored+1 {
		t.Fatalf("counter %d after the take-over; want at least %d", c, restored+1)
	}
	if err := s.Release(ctx, l); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("Release by the first holder: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if l3 := mustAcquire(t, s, "behind.k", fp("b"), time.Hour); l3.Token <= l2.Token {
		t.Fatalf("claim after Release: token %d, want above %d", l3.Token, l2.Token)
	}
}

// TestMaxTokenRecordFailsClosed: a record carrying idem.MaxToken cannot be
// taken over (no higher token exists): Acquire refuses with
// ErrCounterExhausted, wrapping idem.ErrCorruptRecord, and grants nothing.
func TestMaxTokenRecordFailsClosed(t *testing.T) {
	s := newStore(t, Options{})
	mustAcquire(t, s, "max.k", fp("a"), time.Hour)
	setAttr(t, s, "max.k", attrToken, tokAV(idem.MaxToken))
	setAttr(t, s, "max.k", attrLease, msAV(time.Now().Add(-time.Second)))
	l, rec, err := s.Acquire(context.Background(), "max.k", fp("a"), time.Hour)
	if l != nil || rec != nil || !errors.Is(err, ErrCounterExhausted) || !errors.Is(err, idem.ErrCorruptRecord) {
		t.Fatalf("Acquire over MaxToken: %v, %v, %v; want ErrCounterExhausted only", l, rec, err)
	}
}

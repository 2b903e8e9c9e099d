package naive

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// The scenarios of the second wave's designs, run by TestFlawsWithEngine
// like the first six: each against its design and against memstore.

var errRetryable = errors.New("upstream unavailable")

// releaseThenRetry: A fails with a retryable error, so the engine releases
// the key; its retry must get the key at once, under a higher token.
func releaseThenRetry(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	resA, errA := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		return idem.Response{}, errRetryable
	})
	if !errors.Is(errA, errRetryable) {
		t.Fatalf("A: err = %v, want its retryable error", errA)
	}
	var bRan bool
	resB, errB := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		bRan = true
		return respond("B"), nil
	})
	observed := fmt.Sprintf("A (token %d) released; the retry: ran=%v token %d err=%v", resA.Token, bRan, resB.Token, errB)
	return !bRan || errB != nil || resB.Token <= resA.Token, observed
}

// pauseSuccessorFails: holder A stalls past its lease; B takes over and
// fails with a retryable error (released); C gets the key and is still
// running when A wakes up and fails permanently. A's failure must be
// refused: C holds the key.
func pauseSuccessorFails(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	ctx, s := withStall(t)
	a := doAsync(ctx, e, func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 409, Body: []byte("stale")}, idem.Permanent(errors.New("effect rejected"))
	})
	await(t, s.reached, "A to stall")
	clock.Advance(2 * testTTL)
	resB, errB := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		return idem.Response{}, errRetryable
	})
	if !errors.Is(errB, errRetryable) {
		t.Fatalf("B: %+v, %v; want it to take over and fail retryably", resB, errB)
	}
	c, releaseC := runHeld(t, e, "C")
	s.wake()
	oa := await(t, a, "A to return")
	releaseC()
	oc := await(t, c, "C to return")
	observed := fmt.Sprintf("A (token %d) stalled; B (token %d) took over and released; C (token %d) ran; A's late failure: %v; then C: %v",
		oa.res.Token, resB.Token, oc.res.Token, oa.err, oc.err)
	return !errors.Is(oa.err, idem.ErrLeaseLost), observed
}

// takeoverRace: holder A crashes and leaves its lease; after it expired, two
// retries come at the same moment. Only one may take the key over.
func takeoverRace(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	crashHolderA(t, e)
	clock.Advance(2 * testTTL)
	return duplicates(t, st, clock)
}

// staleHeartbeat: holder A stalls past its lease; B takes over and runs. A
// wakes up, and its function waits for the engine to cancel it, as a
// function that honours cancellation does; the heartbeat runs meanwhile. A
// store that refuses A's heartbeat gets A cancelled within a few beats.
func staleHeartbeat(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock, idem.WithHeartbeat(2*time.Millisecond))
	ctx, s := withStall(t)
	var beats atomic.Int32
	spy := beatCounter{Store: st, n: &beats}
	eA := newEngine(spy, clock, idem.WithHeartbeat(2*time.Millisecond))
	cancelled := make(chan bool, 1)
	a := doAsync(ctx, eA, func(ctx context.Context) (idem.Response, error) {
		select {
		case <-ctx.Done():
			cancelled <- true
			return idem.Response{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
			cancelled <- false
			return respond("A"), nil
		}
	})
	await(t, s.reached, "A to stall")
	clock.Advance(2 * testTTL)
	b, releaseB := runHeld(t, e, "B")
	s.wake()
	wasCancelled := await(t, cancelled, "A's function to end")
	oa := await(t, a, "A to return")
	releaseB()
	ob := await(t, b, "B to return")
	observed := fmt.Sprintf("A (token %d) resumed after B (token %d) took over: cancelled=%v after %d heartbeats, err=%v; B: err=%v",
		oa.res.Token, ob.res.Token, wasCancelled, beats.Load(), oa.err, ob.err)
	return !wasCancelled, observed
}

// beatCounter passes calls to a store and counts successful heartbeats.
type beatCounter struct {
	idem.Store
	n *atomic.Int32
}

func (s beatCounter) Heartbeat(ctx context.Context, l *idem.Lease, ttl time.Duration) error {
	err := s.Store.Heartbeat(ctx, l, ttl)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

// mismatchedRequest: request A completes under the key; request B, another
// request (another endpoint, another body) with the same key, must be
// refused with ErrFingerprintMismatch, never answered with A's response.
func mismatchedRequest(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	if _, err := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		return respond("charge"), nil
	}); err != nil {
		t.Fatalf("A: %v", err)
	}
	refund := idem.FingerprintString("POST /refunds", `{"sku":"x"}`)
	var bRan bool
	resB, errB := e.Do(t.Context(), testKey, refund, func(context.Context) (idem.Response, error) {
		bRan = true
		return respond("refund"), nil
	})
	observed := fmt.Sprintf("B (another request, same key): ran=%v replayed=%v body %q err=%v", bRan, resB.Replayed, resB.Response.Body, errB)
	return !errors.Is(errB, idem.ErrFingerprintMismatch), observed
}

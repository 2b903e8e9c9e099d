package naive

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// uncertainRetried: A's provider call times out after it may have charged
// (an ambiguous error), so the key is recorded uncertain; the client's
// retry, long after, must not run the charge again.
func uncertainRetried(t *testing.T, st idem.Store, clock *memstore.ManualClock) (bool, string) {
	e := newEngine(st, clock)
	resA, errA := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		return respond("A"), idem.MarkAmbiguous(errors.New("provider timed out"))
	})
	if !errors.Is(errA, idem.ErrUncertain) {
		t.Fatalf("A: %+v, %v; want ErrUncertain", resA, errA)
	}
	clock.Advance(2 * testTTL)
	var bRan bool
	resB, errB := e.Do(t.Context(), testKey, testFP, func(context.Context) (idem.Response, error) {
		bRan = true
		return respond("B"), nil
	})
	observed := fmt.Sprintf("A (token %d) uncertain; the retry: ran=%v token %d err=%v", resA.Token, bRan, resB.Token, errB)
	return bRan || !errors.Is(errB, idem.ErrUncertain), observed
}

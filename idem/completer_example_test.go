package idem_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// A holder crashed after charging the card and before recording it; its
// client never came back. The completer takes the key over, the recovery
// hook finds the charge, and the key is completed with it.
func ExampleEngine_RecoverAbandoned() {
	clock := memstore.NewManualClock(time.Unix(1e9, 0))
	store := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
	defer store.Close()
	charged := map[string]bool{}

	holder := idem.New(store, idem.WithLeaseTTL(time.Minute), idem.WithHook(func(_ context.Context, p idem.Point, _ idem.Lease) error {
		if p == idem.PointAfterFn {
			return errors.New("process died")
		}
		return nil
	}))
	fp := idem.FingerprintString("POST", "/charges", `{"amount":100}`)
	_, err := holder.Do(context.Background(), "order-7", fp, func(ctx context.Context) (idem.Response, error) {
		l, _ := idem.LeaseFrom(ctx)
		charged[l.Key] = true
		return idem.Response{Status: 201, Body: []byte("charged")}, nil
	})
	fmt.Println("holder:", err)

	clock.Advance(2 * time.Minute)
	completer := idem.New(store, idem.WithRecovery(func(_ context.Context, l idem.Lease) (idem.Response, bool, error) {
		// A real hook fences the ledger at l.Token in the same step.
		return idem.Response{Status: 201, Body: []byte("charged (recovered)")}, charged[l.Key], nil
	}))
	rep, err := completer.RecoverAbandoned(context.Background(), time.Minute, 0)
	fmt.Printf("%+v %v\n", rep, err)
	rec, _ := store.Get(context.Background(), "order-7")
	fmt.Println(rec.Status, string(rec.Response.Body))
	// Output:
	// holder: idem: execution aborted by fault hook at after-fn: process died
	// {Found:1 Completed:1 Released:0 Skipped:0 Lost:0 Errors:0} <nil>
	// completed charged (recovered)
}

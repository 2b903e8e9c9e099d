package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func ExampleNew() {
	clock := memstore.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.Options{Clock: clock, SweepInterval: -1})
	defer store.Close()
	ctx := context.Background()
	fp := idem.FingerprintString("req")

	lease, _, _ := store.Acquire(ctx, "k", fp, 10*time.Second)
	_, rec, _ := store.Acquire(ctx, "k", fp, 10*time.Second)
	fmt.Println("duplicate sees:", rec.Status)

	clock.Advance(11 * time.Second) // the holder crashed; its lease expires
	next, _, _ := store.Acquire(ctx, "k", fp, 10*time.Second)
	fmt.Println("take-over:", next.Token > lease.Token, next.PrevToken == lease.Token)
	fmt.Println("stale complete:", store.Complete(ctx, lease, idem.Response{Status: 200}, time.Hour))
	// Output:
	// duplicate sees: in_progress
	// take-over: true true
	// stale complete: idem: lease lost
}

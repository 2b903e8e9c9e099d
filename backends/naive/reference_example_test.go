package naive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/idem"
)

// lazyHeartbeat is a variant built on the reference store: everything is
// Reference's but Heartbeat, which does nothing (the no-heartbeat design
// written from outside the package).
type lazyHeartbeat struct {
	*naive.Reference
}

func (lazyHeartbeat) Heartbeat(context.Context, *idem.Lease, time.Duration) error { return nil }

// A variant is the reference store embedded with one method replaced.
// Here the heartbeat does nothing, so a slow holder's lease runs out and a
// second request takes its key over while the first still runs.
func ExampleReference() {
	clock := &fixedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var st idem.Store = lazyHeartbeat{naive.NewReference(naive.Options{Clock: clock})}
	ctx := context.Background()
	fp := idem.FingerprintString("POST /charges", `{"amount":42}`)

	first, _, _ := st.Acquire(ctx, "charge-42", fp, time.Second)
	_ = st.Heartbeat(ctx, first, time.Second) // the variant: no renewal
	clock.t = clock.t.Add(2 * time.Second)
	second, _, _ := st.Acquire(ctx, "charge-42", fp, time.Second)
	fmt.Println("taken over:", second != nil && second.PrevToken == first.Token)
	fmt.Println("first holder's completion:", st.Complete(ctx, first, idem.Response{Status: 201}, time.Hour))

	// The reference store itself renews the lease, so the key stays its
	// holder's.
	ref := naive.NewReference(naive.Options{Clock: clock})
	l, _, _ := ref.Acquire(ctx, "charge-43", fp, time.Second)
	_ = ref.Heartbeat(ctx, l, 5*time.Second)
	clock.t = clock.t.Add(2 * time.Second)
	_, rec, _ := ref.Acquire(ctx, "charge-43", fp, time.Second)
	fmt.Println("reference: still", rec.Status)
	// Output:
	// taken over: true
	// first holder's completion: idem: lease lost
	// reference: still in_progress
}

// fixedClock is a clock the example moves by hand.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

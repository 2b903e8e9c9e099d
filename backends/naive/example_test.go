package naive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/idem"
)

func ExampleNames() {
	for _, name := range naive.Names() {
		fmt.Println(name)
	}
	// Output:
	// check-then-act
	// cache-on-success
	// unfenced-takeover
	// delete-on-error
	// no-expiry
	// no-heartbeat
	// token-restart
	// racy-takeover
	// unfenced-heartbeat
	// fail-open
	// keeps-pending
	// unscoped-key
	// two-step-takeover
	// fail-on-expiry
	// retries-uncertain
	// touch-on-read
	// lean-record
	// skewed-leases
}

func ExampleNew() {
	// cache-on-success keeps no in-progress state: two requests with the
	// same key, neither finished yet, both get a lease and both would run.
	st, err := naive.New("cache-on-success", nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	fp := idem.FingerprintString("POST /charges", `{"amount":42}`)
	first, _, _ := st.Acquire(ctx, "charge-42", fp, time.Minute)
	second, _, _ := st.Acquire(ctx, "charge-42", fp, time.Minute)
	fmt.Println("first lease:", first != nil, "second lease:", second != nil)

	_, err = naive.New("optimistic", nil)
	fmt.Println(err)
	// Output:
	// first lease: true second lease: true
	// naive: unknown design "optimistic" (valid: check-then-act, cache-on-success, unfenced-takeover, delete-on-error, no-expiry, no-heartbeat, token-restart, racy-takeover, unfenced-heartbeat, fail-open, keeps-pending, unscoped-key, two-step-takeover, fail-on-expiry, retries-uncertain, touch-on-read, lean-record, skewed-leases)
}

package workload

import (
	"context"
	"sync"
)

// FanOut calls do(w, i) for every i in [0, n) on min(workers, n)
// goroutines (at least one: a workers below 1 counts as 1), w (0 ≤ w <
// workers) naming the goroutine that makes the call.
// Once ctx ends it hands out no more indexes; it waits for the calls under
// way and returns ctx.Err(). A liveness probe (Target.Probe) uses it to
// call its keys a bounded number at a time.
func FanOut(ctx context.Context, n, workers int, do func(w, i int)) error {
	workers = max(workers, 1)
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range min(workers, n) {
		wg.Go(func() {
			for i := range work {
				do(w, i)
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return ctx.Err()
}

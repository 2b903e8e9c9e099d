package workload_test

import (
	"slices"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// TestCountBoundedRun checks Config.Requests: with no duration the
// traffic is exactly that many logical requests, numbered 1 to Requests
// across the clients, and every copy is still delivered, in the closed
// and in the open loop.
func TestCountBoundedRun(t *testing.T) {
	for _, rate := range []float64{0, 2000} {
		cfg := workload.Config{
			Seed: 3, Requests: 25, Clients: 3, Rate: rate,
			Keys:  workload.Keys{Delayed: 1, Delay: 20 * time.Millisecond, DupFraction: 1},
			Store: newStore(t, nil), Sink: mustSink(t, "fenced"), NoProbe: true,
		}
		res, ops := run(t, cfg)
		calls := map[int64]int{}
		var keys []string
		for _, op := range ops {
			if op.Kind != history.KindCall || op.Probe {
				continue
			}
			calls[op.Request]++
			if !slices.Contains(keys, op.Key) {
				keys = append(keys, op.Key)
			}
		}
		if len(keys) != 25 {
			t.Fatalf("rate %g: %d keys, want 25", rate, len(keys))
		}
		// Every request has its delayed copy, the last ones' due after
		// the last request was sent: 50 deliveries, each request twice.
		for req, n := range calls {
			if n != 2 {
				t.Errorf("rate %g: request %x delivered %d times, want 2", rate, req, n)
			}
		}
		if len(calls) != 25 || res.Deliveries != 50 {
			t.Fatalf("rate %g: %d requests, %d deliveries; want 25 and 50", rate, len(calls), res.Deliveries)
		}
	}
}

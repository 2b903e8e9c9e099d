package workload

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/idembench/idembench/history"
)

// probeWorkers bounds the concurrency of the liveness probe.
const probeWorkers = 32

// advancer is a manual clock (memstore.ManualClock).
type advancer interface{ Advance(time.Duration) }

// probe waits one lease TTL on the store's clock, then calls every key
// marked for it (see the package doc) once, with the key's original
// fingerprint, and records the calls with Probe set. Probes neither fail nor sleep in the
// business function and are never retried. It returns the number of keys
// probed.
func (d *driver) probe(ctx context.Context) (int, error) {
	keys := make([]string, 0, len(d.pending))
	for k := range d.pending {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return 0, nil
	}
	slices.Sort(keys)
	ttl := d.cfg.Engine.LeaseTTL
	if a, ok := d.cfg.StoreClock.(advancer); ok {
		a.Advance(ttl + time.Millisecond)
	} else {
		// A little more than the TTL, so that a lease renewed at the very
		// end of the drain has surely expired.
		t := time.NewTimer(ttl + ttl/10 + 5*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	timeout := max(2*ttl, time.Second) + d.cfg.Engine.ConflictWait
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range min(probeWorkers, len(keys)) {
		client := d.cfg.ClientBase + d.cfg.Clients + 1 + w
		wg.Go(func() {
			for i := range work {
				d.probeKey(ctx, client, int64(i), keys[i], timeout)
			}
		})
	}
	for i := range keys {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return len(keys), ctx.Err()
}

func (d *driver) probeKey(ctx context.Context, client int, seq int64, key string, timeout time.Duration) {
	fp, fpID := fingerprint(key, false)
	x := &execution{client: client, key: key, seq: seq, probe: true, attempt: 1}
	op := history.Op{
		Kind:    history.KindCall,
		Client:  client,
		Worker:  client,
		Key:     key,
		Attempt: 1,
		FP:      fpID,
		Probe:   true,
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	op.Call = d.now()
	res, err := d.do(pctx, key, fp, d.business(x))
	cancel()
	op.Return = d.now()
	classify(&op, res, err, x)
	d.rec.Record(op)
}

package consume

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// node runs consumers: in the coordinator process (in-process consumers)
// or in a worker process. It owns the engine its consumers share.
type node struct {
	co      coord
	b       broker
	engine  *idem.Engine // nil: broker-only
	latency time.Duration
	now     func() int64
	execs   atomic.Int64
	// batch > 1 pulls and claims batches of up to batch deliveries,
	// waiting at most linger for one to fill (Config.Batch).
	batch  int
	linger time.Duration
	// killInHook: a crash in a batch kills this process in the fault
	// hook, before the batch's outcomes reach the store (a worker).
	killInHook bool
	// ended is called when a consumer loop ends by a crash (crashed) or a
	// restart: in-process it starts a replacement; in a worker a crash
	// kills the process.
	ended func(ctx context.Context, id int, crashed bool)
}

// newEngine builds the node's engine on store: the fault hook always, the
// recovery hook when recovery is set.
func (n *node) newEngine(store idem.Store, leaseTTL time.Duration, recovery bool) {
	opts := []idem.Option{idem.WithLeaseTTL(leaseTTL), idem.WithHook(n.hook)}
	if recovery {
		opts = append(opts, idem.WithRecovery(n.recover))
	}
	n.engine = idem.New(store, opts...)
}

// consume is one consumer's loop. It ends when ctx ends, when the consumer
// crashes or when it restarts (after restartAfter deliveries, if > 0).
func (n *node) consume(ctx context.Context, id, restartAfter int) {
	var sub subscription
	defer func() {
		if sub != nil {
			sub.close()
		}
	}()
	for done := 0; ctx.Err() == nil; {
		if sub == nil {
			s, err := n.b.subscribe(ctx, n.engine, n.business)
			if err != nil {
				sleep(ctx, 100*time.Millisecond) // broker restarting
				continue
			}
			sub = s
		}
		if restartAfter > 0 && done >= restartAfter {
			n.fault(history.FaultStop, id, "restart consumer %d (close, new consumer)", id)
			sub.close()
			sub = nil
			n.ended(ctx, id, false)
			return
		}
		if n.batch > 1 {
			ds, err := sub.nextBatch(ctx, n.batch, n.linger)
			if err != nil {
				sub.close()
				sub = nil
				sleep(ctx, 50*time.Millisecond)
				continue
			}
			if len(ds) == 0 {
				continue
			}
			done += len(ds)
			if n.handleBatch(ctx, id, sub, ds) {
				n.fault(history.FaultCrash, id, "crash consumer %d after effect, before ack (batch of %d)", id, len(ds))
				n.ended(ctx, id, true) // a worker process died in the hook already
				sub.close()
				sub = nil
				return
			}
			continue
		}
		d, err := sub.next(ctx)
		if err != nil {
			sub.close()
			sub = nil
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		done++
		if n.handle(ctx, id, d) {
			n.fault(history.FaultCrash, id, "crash consumer %d after effect, before ack (%s)", id, d.key())
			n.ended(ctx, id, true) // a worker process dies here
			sub.close()
			sub = nil
			return
		}
	}
}

// fault records an instantaneous fault of kind for consumer id.
func (n *node) fault(kind history.FaultKind, id int, format string, args ...any) {
	now := n.now()
	n.co.record(history.Fault(kind, fmt.Sprintf(format, args...), now, now).OnClient(id))
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

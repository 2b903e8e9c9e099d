package backendfault

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// killer is a Server that can also be crashed without starting it again
// (*servers.Redis and *servers.Postgres).
type killer interface {
	Kill() error
}

// restartHook crashes the private server once, from the engine hook at
// idem.PointAfterFn of the first execution that reaches it while the
// schedule runs (its effect happened, its completion is not written), and
// starts it again the aimed fault's Duration later, so the completion's
// write meets the dead server.
func (e *env) restartHook(k killer) idem.Hook {
	var fired atomic.Bool
	a := e.plan.Aim
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		if p != a.Point || !e.running.Load() || !fired.CompareAndSwap(false, true) {
			return nil
		}
		start := history.Now()
		if err := k.Kill(); err != nil {
			e.fail(fmt.Errorf("aimed restart: %w", err))
			return nil
		}
		e.aimWG.Go(func() {
			time.Sleep(a.Duration)
			err := e.plan.Server.Restart(context.Background())
			label := e.plan.restartLabel() + ", aimed after the effect of " + l.Key
			e.record(history.Fault(history.FaultRestart, label, start, history.Now()).OnKey(l.Key, uint64(l.Token)))
			if err != nil {
				e.fail(fmt.Errorf("aimed restart: %w", err))
			}
		})
		return nil
	}
}

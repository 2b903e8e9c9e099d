package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// execution is the context a Func runs with: the caller's context, cancelled
// when the lease is lost, carrying the lease for LeaseFrom. It also owns the
// heartbeat that renews the lease while the Func runs.
type execution struct {
	context.Context // cancellable child of the caller's context
	cancel          context.CancelCauseFunc
	e               *Engine
	parent          context.Context
	lease           *Lease // renewed by beat; guarded by mu
	public          Lease  // immutable copy for LeaseFrom

	mu        sync.Mutex
	timer     *time.Timer
	stopped   bool
	renewedAt time.Time // when the last successful renewal was sent
}

func (e *Engine) startExecution(ctx context.Context, l *Lease) *execution {
	cctx, cancel := context.WithCancelCause(ctx)
	x := &execution{Context: cctx, cancel: cancel, e: e, parent: ctx, lease: l, public: *l}
	if e.cfg.heartbeat > 0 {
		x.renewedAt = e.cfg.clock.Now()
		x.timer = time.AfterFunc(e.cfg.heartbeat, x.beat)
	}
	return x
}

// Value returns the lease for LeaseFrom and defers everything else.
func (x *execution) Value(key any) any {
	if _, ok := key.(leaseKey); ok {
		return &x.public
	}
	return x.Context.Value(key)
}

// stop ends the heartbeat; when it returns no renewal is running and none
// will start. It also releases the context's resources.
func (x *execution) stop() {
	x.mu.Lock()
	x.stopped = true
	if x.timer != nil {
		x.timer.Stop()
	}
	x.mu.Unlock()
	x.cancel(context.Canceled)
}

// beat renews the lease once and schedules the next renewal. Lease loss
// cancels the Func's context with cause ErrLeaseLost. A store that does not
// answer is retried at the next beat until a full lease TTL has passed since
// the last successful renewal; then the lease may have expired and the
// context is cancelled as well.
func (x *execution) beat() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopped {
		return
	}
	cfg := &x.e.cfg
	sent := cfg.clock.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.parent), cfg.heartbeat)
	err := x.e.store.Heartbeat(ctx, x.lease, cfg.leaseTTL)
	cancel()
	switch {
	case err == nil:
		x.renewedAt = sent
	case errors.Is(err, ErrLeaseLost):
		x.stopped = true
		x.cancel(fmt.Errorf("idem: heartbeat of %q: %w", x.lease.Key, err))
		return
	case cfg.clock.Now().Sub(x.renewedAt) >= cfg.leaseTTL:
		x.stopped = true
		x.cancel(fmt.Errorf("%w: key %q not renewed for %s: %w", ErrLeaseLost, x.lease.Key, cfg.leaseTTL, err))
		return
	}
	x.timer.Reset(cfg.heartbeat)
}

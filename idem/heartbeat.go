package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// heartbeatShards spreads registrations over independently locked lists.
const heartbeatShards = 16

// ticksPerBeat is how many scheduler ticks make one heartbeat interval: a
// lease is renewed between 1 and 1.25 intervals after its last renewal.
const ticksPerBeat = 4

// heartbeats renews the leases of the engine's running executions. One
// goroutine ticks every quarter heartbeat interval while any execution runs,
// starts a renewal for each execution that is due, and exits when none runs.
// Registering an execution is an O(1) list insert with no allocation and no
// clock read, which keeps Do cheap for functions far shorter than a heartbeat
// interval (the common case).
type heartbeats struct {
	e       *Engine
	tick    time.Duration
	now     atomic.Int64 // ticks since the engine started its first loop
	active  atomic.Int64 // registered executions
	running atomic.Bool
	next    atomic.Uint32 // round-robin shard choice
	kick    chan struct{} // Close asks the loop to look now
	loopMu  sync.Mutex
	done    chan struct{} // closed when the current loop exits
	shards  [heartbeatShards]struct {
		mu   sync.Mutex
		head *execution
		_    [48]byte
	}
}

func (h *heartbeats) register(x *execution) {
	x.shard = h.next.Add(1) % heartbeatShards
	sh := &h.shards[x.shard]
	x.renewedTick.Store(h.now.Load())
	sh.mu.Lock()
	x.nextX = sh.head
	if sh.head != nil {
		sh.head.prevX = x
	}
	sh.head = x
	sh.mu.Unlock()
	h.active.Add(1)
	if h.running.CompareAndSwap(false, true) {
		h.startLoop()
	}
}

func (h *heartbeats) startLoop() {
	h.loopMu.Lock()
	done := make(chan struct{})
	h.done = done
	h.loopMu.Unlock()
	go func() {
		defer close(done)
		h.loop()
	}()
}

// close waits until the loop has exited, which it does at the first tick
// with no execution running.
func (h *heartbeats) close() {
	h.loopMu.Lock()
	done := h.done
	h.loopMu.Unlock()
	if done == nil {
		return
	}
	select {
	case h.kick <- struct{}{}:
	default:
	}
	<-done
}

func (h *heartbeats) unregister(x *execution) {
	sh := &h.shards[x.shard]
	sh.mu.Lock()
	if x.prevX != nil {
		x.prevX.nextX = x.nextX
	} else {
		sh.head = x.nextX
	}
	if x.nextX != nil {
		x.nextX.prevX = x.prevX
	}
	x.prevX, x.nextX = nil, nil
	sh.mu.Unlock()
	h.active.Add(-1)
}

func (h *heartbeats) loop() {
	t := time.NewTicker(h.tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.kick:
			if h.active.Load() != 0 {
				continue
			}
		}
		n := h.now.Add(1)
		for i := range h.shards {
			sh := &h.shards[i]
			sh.mu.Lock()
			for x := sh.head; x != nil; x = x.nextX {
				if n-x.renewedTick.Load() >= ticksPerBeat && x.beating.CompareAndSwap(false, true) {
					go x.beat(n)
				}
			}
			sh.mu.Unlock()
		}
		if h.active.Load() == 0 {
			// Exit, unless a registration raced with the decision.
			h.running.Store(false)
			if h.active.Load() == 0 || !h.running.CompareAndSwap(false, true) {
				return
			}
			// A registration raced with the decision and found running
			// still true: keep serving it.
		}
	}
}

// execution is the context a Func runs with: the caller's context, cancelled
// with cause ErrLeaseLost when the lease is lost, carrying the lease for
// LeaseFrom.
//
// The cancellable context is created on first use (Done, Err, or a Value
// lookup other than the lease), so a Func that never looks at its context
// costs no allocation for it; a lease lost before that is applied when it is
// created.
type execution struct {
	parent context.Context
	e      *Engine
	lease  *Lease // renewed by beat; guarded by mu
	public Lease  // immutable copy for LeaseFrom

	// Heartbeat registration; the links are guarded by the scheduler
	// shard's lock.
	shard        uint32
	prevX, nextX *execution
	renewedTick  atomic.Int64 // scheduler tick at which the last renewal was sent
	beating      atomic.Bool  // a renewal is in flight

	// beatMu is held for a whole renewal, so stop can wait for one in
	// flight; mu guards the context state and is never held across I/O, so
	// the Func's ctx.Done() and ctx.Err() never wait for the store.
	beatMu  sync.Mutex
	mu      sync.Mutex
	cctx    context.Context // nil until first use
	cancel  context.CancelCauseFunc
	lost    error // why the lease was lost, nil while it is held
	stopped bool
}

var _ context.Context = (*execution)(nil)

func (e *Engine) startExecution(ctx context.Context, l *Lease) *execution {
	x := &execution{parent: ctx, e: e, lease: l, public: *l}
	if e.cfg.heartbeat > 0 {
		e.beats.register(x)
	}
	return x
}

// ctx returns the cancellable context, creating it on first use.
func (x *execution) ctx() context.Context {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cctx == nil {
		x.cctx, x.cancel = context.WithCancelCause(x.parent)
		if x.lost != nil {
			x.cancel(x.lost)
		} else if x.stopped {
			x.cancel(context.Canceled)
		}
	}
	return x.cctx
}

// Deadline returns the caller's deadline.
func (x *execution) Deadline() (time.Time, bool) { return x.parent.Deadline() }

// Done is closed when the caller's context ends or the lease is lost.
func (x *execution) Done() <-chan struct{} { return x.ctx().Done() }

// Err reports context.Canceled once the lease is lost (context.Cause gives
// the ErrLeaseLost cause), or the caller's context error.
func (x *execution) Err() error { return x.ctx().Err() }

// Value returns the lease for LeaseFrom and defers everything else to the
// cancellable context.
func (x *execution) Value(key any) any {
	if _, ok := key.(leaseKey); ok {
		return &x.public
	}
	return x.ctx().Value(key)
}

// stop ends the heartbeat; when it returns no renewal is running and none
// will start. It also releases the context's resources.
func (x *execution) stop() {
	if x.e.cfg.heartbeat > 0 {
		x.e.beats.unregister(x)
	}
	x.beatMu.Lock() // waits for a renewal in flight
	defer x.beatMu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopped = true
	if x.cancel != nil {
		x.cancel(context.Canceled)
	}
}

// beat renews the lease once; tick is the scheduler tick it was started at.
// Lease loss cancels the Func's context with cause ErrLeaseLost. A store
// that does not answer is retried at the next beat until a full lease TTL has
// passed since the last renewal was sent; then the lease may have expired and
// the context is cancelled as well.
func (x *execution) beat(tick int64) {
	x.beatMu.Lock()
	defer x.beatMu.Unlock()
	defer x.beating.Store(false)
	x.mu.Lock()
	stopped := x.stopped
	x.mu.Unlock()
	if stopped {
		return
	}
	cfg := &x.e.cfg
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.parent), cfg.heartbeat)
	t0 := x.e.now()
	err := x.e.store.Heartbeat(ctx, x.lease, cfg.leaseTTL)
	cancel()
	ev := Event{Key: x.lease.Key, Token: x.lease.Token, Op: OpHeartbeat, Err: err, Finish: x.e.since(t0)}
	switch {
	case err == nil:
		x.renewedTick.Store(tick)
		ev.Transition, ev.Op = TransitionHeartbeat, ""
	case errors.Is(err, ErrLeaseLost):
		x.loseLease(fmt.Errorf("idem: heartbeat of %q: %w", x.lease.Key, err))
		ev.Transition = TransitionHeartbeatRefused
	case time.Duration(x.e.beats.now.Load()-x.renewedTick.Load())*x.e.beats.tick >= cfg.leaseTTL:
		ev.Err = fmt.Errorf("%w: key %q not renewed for %s: %w", ErrLeaseLost, x.lease.Key, cfg.leaseTTL, err)
		x.loseLease(ev.Err)
		ev.Transition = TransitionHeartbeatRefused
	default:
		ev.Transition = TransitionBackendError
	}
	if x.e.observing() {
		x.e.cfg.observer(x.parent, ev)
	}
}

// loseLease records why the lease is gone and cancels the context.
func (x *execution) loseLease(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopped = true
	x.lost = err
	if x.cancel != nil {
		x.cancel(err)
	}
}

package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// errShortBatch reports a BatchStore that answered fewer entries than asked.
var errShortBatch = errors.New("batch store answered fewer entries than calls")

// CoalesceOptions configures WithCoalescing. Zero fields take the defaults.
type CoalesceOptions struct {
	// MaxInFlight is how many store calls (claims and outcome writes
	// together) may be on their way to the store at once; a call that
	// finds them all busy waits and leaves with the next batch. The
	// default is the store's PoolSize (PoolSizer): a call is then batched
	// only when every connection is taken and it would otherwise have
	// waited for one. A store that does not state a pool size is not
	// coalesced unless MaxInFlight is set. A server bound by its CPU
	// rather than by round trips (PostgreSQL on a few cores) does more with
	// fewer calls under way and larger batches: about four per server core
	// (docs/performance.md).
	MaxInFlight int
	// MaxBatch caps the calls of one batch (default 128).
	MaxBatch int
}

// defaultMaxBatch is CoalesceOptions.MaxBatch when it is not set.
const defaultMaxBatch = 128

// PoolSizer is an optional capability of a Store that sends its requests
// over a bounded pool of connections: PoolSize returns how many requests
// it can have under way at once (0 or less: it does not know).
// WithCoalescing batches only the calls beyond that many.
type PoolSizer interface {
	PoolSize() int
}

// WithCoalescing groups the claims and the outcome writes of concurrent Do
// calls into batches, when the store is a BatchStore (otherwise it does
// nothing), the way auto-pipelining clients do, but only when calls would
// wait anyway: a call that finds fewer than MaxInFlight store calls under
// way (claims and outcome writes together; by default, fewer than the
// store's connections) is sent at once, alone, as a plain Acquire or
// Complete, exactly as without coalescing; calls that arrive while
// MaxInFlight are under way are queued and sent together as the next batch
// (AcquireBatch, FinishBatch) as soon as one of those returns. A lone
// caller, and any number of callers that the store's pool can serve, never
// wait for a batch; callers beyond it share round trips (and, on
// PostgreSQL, commits) instead of queueing for a connection one by one.
// Per key the semantics are unchanged. A call whose context ends while it
// is queued leaves the queue and returns the context's error (not
// ambiguous: nothing was sent, as for a call that waited for a pool
// connection); once its batch was sent, it returns an error that satisfies
// Ambiguous, as a plain call interrupted on its way does. Heartbeats and
// reads are not coalesced.
//
// Coalescing is on by default with the zero CoalesceOptions: an engine on a
// store that is a BatchStore and a PoolSizer (redisstore, pgstore) batches
// the calls beyond its pool; on any other store the default does nothing.
// WithCoalescing changes the options; WithoutCoalescing turns it off.
func WithCoalescing(o CoalesceOptions) Option {
	return func(c *config) {
		if o.MaxBatch <= 0 {
			o.MaxBatch = defaultMaxBatch
		}
		c.coalesce = &o
	}
}

// WithoutCoalescing turns coalescing off: every claim and outcome write is
// its own store call, and a call beyond the store's pool waits for a
// connection (see WithCoalescing).
func WithoutCoalescing() Option {
	return func(c *config) { c.coalesce = nil }
}

// coalescing is a Store whose Acquire, Complete, Fail and Release calls are
// grouped into batches of the BatchStore beneath it.
type coalescing struct {
	Store
	acquires *coalescer[acquireCall, AcquireResult]
	finishes *coalescer[finishCall, error]
}

type acquireCall struct {
	req AcquireRequest
	ttl time.Duration
}

type finishCall struct {
	f         Finish
	retention time.Duration
}

// newCoalescing returns st's coalescing front, or nil when there is
// nothing to coalesce (no MaxInFlight and no pool size).
func newCoalescing(st Store, bs BatchStore, o CoalesceOptions) *coalescing {
	if ps, ok := st.(PoolSizer); ok && o.MaxInFlight <= 0 {
		o.MaxInFlight = ps.PoolSize()
	}
	if o.MaxInFlight <= 0 {
		return nil
	}
	g := &gate{max: o.MaxInFlight}
	c := &coalescing{Store: st}
	c.acquires = &coalescer[acquireCall, AcquireResult]{g: g, op: "acquire", maxBatch: o.MaxBatch,
		single: func(ctx context.Context, a acquireCall) AcquireResult {
			var r AcquireResult
			r.Lease, r.Record, r.Err = st.Acquire(ctx, a.req.Key, a.req.Fingerprint, a.ttl)
			return r
		},
		batch: func(ctx context.Context, as []acquireCall) []AcquireResult {
			reqs := make([]AcquireRequest, len(as))
			for i, a := range as {
				reqs[i] = a.req
			}
			return bs.AcquireBatch(ctx, reqs, as[0].ttl)
		},
		class: func(a acquireCall) (string, time.Duration) { return a.req.Key, a.ttl },
		fail:  func(err error) AcquireResult { return AcquireResult{Err: err} },
	}
	c.finishes = &coalescer[finishCall, error]{g: g, op: "finish", maxBatch: o.MaxBatch,
		single: func(ctx context.Context, f finishCall) error {
			switch f.f.Kind {
			case FinishComplete:
				return st.Complete(ctx, f.f.Lease, f.f.Response, f.retention)
			case FinishFail:
				return st.Fail(ctx, f.f.Lease, f.f.Response, f.retention)
			}
			return st.Release(ctx, f.f.Lease)
		},
		batch: func(ctx context.Context, fs []finishCall) []error {
			out := make([]Finish, len(fs))
			for i, f := range fs {
				out[i] = f.f
			}
			return bs.FinishBatch(ctx, out, fs[0].retention)
		},
		class: func(f finishCall) (string, time.Duration) { return f.f.Lease.Key, f.retention },
		fail:  func(err error) error { return err },
	}
	g.queues = []queue{c.acquires, c.finishes}
	return c
}

func (c *coalescing) Acquire(ctx context.Context, key string, fp Fingerprint, ttl time.Duration) (*Lease, *Record, error) {
	r := c.acquires.do(ctx, acquireCall{AcquireRequest{key, fp}, ttl})
	return r.Lease, r.Record, r.Err
}

func (c *coalescing) Complete(ctx context.Context, l *Lease, resp Response, retention time.Duration) error {
	return c.finishes.do(ctx, finishCall{Finish{FinishComplete, l, resp}, retention})
}

func (c *coalescing) Fail(ctx context.Context, l *Lease, resp Response, retention time.Duration) error {
	return c.finishes.do(ctx, finishCall{Finish{FinishFail, l, resp}, retention})
}

func (c *coalescing) Release(ctx context.Context, l *Lease) error {
	return c.finishes.do(ctx, finishCall{Finish{Kind: FinishRelease, Lease: l}, 0})
}

// gate bounds the store calls of one coalescing front that are under way,
// claims and outcome writes together, to max (by default the pool size: a
// Do is first a claim and then an outcome write, and with a bound per kind
// twice the pool could be under way, so that calls queued for the pool
// rather than for a batch and nothing was batched until twice the pool's
// callers). It holds the queues of the calls that wait; whoever ends a
// store call sends the next batch, taking the queues in turn.
type gate struct {
	mu       sync.Mutex
	max      int
	inflight int
	queues   []queue
	turn     int
}

// queue is one kind of call's waiting calls; its methods run with g.mu held.
type queue interface {
	waiting() bool
	// launch takes the next batch off the queue and sends it in a new
	// goroutine, which ends the slot (gate.next) when the batch is done.
	launch()
}

// next ends one store call's slot: it sends the next queued batch in the
// slot, or frees it when nothing waits.
func (g *gate) next() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.queues {
		q := g.queues[(g.turn+i)%len(g.queues)]
		if q.waiting() {
			g.turn = (g.turn + i + 1) % len(g.queues)
			q.launch()
			return
		}
	}
	g.inflight--
}

// coalescer sends calls of type C alone while its gate has a free slot, and
// queues them otherwise; whoever ends a store call sends the queue as the
// next batch.
type coalescer[C, R any] struct {
	g        *gate
	op       string
	maxBatch int
	single   func(context.Context, C) R
	batch    func(context.Context, []C) []R
	class    func(C) (key string, d time.Duration) // calls with one d and distinct keys share a batch
	fail     func(error) R

	queue []*waiting[C, R] // under g.mu
}

type waiting[C, R any] struct {
	ctx   context.Context
	call  C
	done  chan R
	taken bool // under g.mu: the call left the queue in a batch
}

// do makes call alone or in the next batch and returns its result. A call
// whose context ends while it is queued leaves the queue and returns the
// context's error, not ambiguous: nothing was sent, as for a call that
// waited for a pool connection. Once its batch was sent, it returns an
// ambiguous error, as a plain call interrupted on its way would.
func (q *coalescer[C, R]) do(ctx context.Context, call C) R {
	g := q.g
	g.mu.Lock()
	if g.inflight < g.max {
		g.inflight++
		g.mu.Unlock()
		r := q.single(ctx, call)
		g.next()
		return r
	}
	w := &waiting[C, R]{ctx: ctx, call: call, done: make(chan R, 1)}
	q.queue = append(q.queue, w)
	g.mu.Unlock()
	select {
	case r := <-w.done:
		return r
	case <-ctx.Done():
	}
	g.mu.Lock()
	taken := w.taken
	if !taken {
		q.queue = slices.DeleteFunc(q.queue, func(o *waiting[C, R]) bool { return o == w })
	}
	g.mu.Unlock()
	if !taken {
		return q.fail(BackendError(q.op, fmt.Errorf("waiting for a batch: %w", context.Cause(ctx))))
	}
	return q.fail(MarkAmbiguous(BackendError(q.op, context.Cause(ctx))))
}

func (q *coalescer[C, R]) waiting() bool { return len(q.queue) > 0 }

func (q *coalescer[C, R]) launch() {
	group := q.take()
	go func() {
		q.send(group)
		q.g.next()
	}()
}

// take removes the next batch from the queue: up to maxBatch calls, in
// order, with the first one's duration and distinct keys. g.mu is held.
func (q *coalescer[C, R]) take() []*waiting[C, R] {
	_, d := q.class(q.queue[0].call)
	keys := make(map[string]struct{}, min(len(q.queue), q.maxBatch))
	var group []*waiting[C, R]
	rest := q.queue[:0:0]
	for _, w := range q.queue {
		k, wd := q.class(w.call)
		_, dup := keys[k]
		if len(group) < q.maxBatch && wd == d && !dup {
			keys[k] = struct{}{}
			w.taken = true
			group = append(group, w)
		} else {
			rest = append(rest, w)
		}
	}
	q.queue = rest
	return group
}

// send makes the calls of group in one batch (one call alone) and hands out
// the results. The batch runs under the first call's context without its
// cancellation: callers whose context ends stop waiting on their own.
func (q *coalescer[C, R]) send(group []*waiting[C, R]) {
	ctx := context.WithoutCancel(group[0].ctx)
	if len(group) == 1 {
		group[0].done <- q.single(ctx, group[0].call)
		return
	}
	calls := make([]C, len(group))
	for i, w := range group {
		calls[i] = w.call
	}
	res := q.batch(ctx, calls)
	for i, w := range group {
		if i < len(res) {
			w.done <- res[i]
		} else {
			w.done <- q.fail(MarkAmbiguous(BackendError("coalesced batch", errShortBatch)))
		}
	}
}

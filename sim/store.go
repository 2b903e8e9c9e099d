package sim

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// errReplyLost is the error of a store call whose reply the simulation
// dropped after the call took effect.
var errReplyLost = errors.New("sim: reply lost (the call reached the store)")

// actorKey carries the identity of the goroutine that makes a call, so
// the scheduler can order it and the recorder can name it.
type actorKey struct{}

// actor is one goroutine of the simulation that acts on shared state: an
// attempt of a client (or its copy), a completer, the sweeper.
type actor struct {
	id     int   // scheduler order: client id, then completers and sweeper
	seq    int64 // attempt number of the client, 0 for the others
	client int   // history Client
	worker int   // history Worker: the app server
	key    string
	exec   string
	plan   *plan // faults drawn for this attempt; nil for the others
	steps  int   // store calls made so far, to aim a lost reply
	// recovered is, for a completer, the response the recovery hook
	// found for the key it is completing.
	recovered *idem.Response
	// fnEnd is when the attempt's function will return (its work
	// drawn); lagged is set once its renewal was delayed.
	fnEnd  atomic.Int64 // UnixNano
	lagged atomic.Bool
}

func actorOf(ctx context.Context) *actor {
	a, _ := ctx.Value(actorKey{}).(*actor)
	return a
}

// gatedStore is the store as one app server's engine sees it: every call
// except Heartbeat waits for its turn at the scheduler, and the attempt's
// plan may drop its reply. Heartbeats are not gated: the engine holds a
// lock of the execution across the renewal that the execution's own
// goroutine also takes, which a parked renewal would turn into a
// deadlock the bubble cannot see (a goroutine blocked on a mutex is not
// durably blocked). Renewals run at the heartbeat scheduler's ticks, when
// every other actor of the instant is parked, so they race only with
// each other; they touch one key each and a renewal commutes with a
// renewal of another lease.
type gatedStore struct {
	w     *world
	inner idem.Store
}

var (
	_ idem.Store   = (*gatedStore)(nil)
	_ idem.Lister  = (*gatedStore)(nil)
	_ idem.Sweeper = (*gatedStore)(nil)
)

// turn parks the caller until the scheduler gives it the turn, and says
// whether the reply of this call is to be lost.
func (g *gatedStore) turn(ctx context.Context, what string) (lose bool) {
	a := actorOf(ctx)
	if a == nil {
		g.w.sch.park(-1, 0, what)
		return false
	}
	g.w.sch.park(a.id, a.seq, what)
	a.steps++
	if a.plan != nil && a.plan.loseStep == a.steps {
		g.w.fault(faultLostReply, a, "reply of "+what+" lost", 0)
		return true
	}
	return false
}

func lost(op string) error {
	return idem.MarkAmbiguous(idem.BackendError(op, errReplyLost))
}

func (g *gatedStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	lose := g.turn(ctx, "acquire")
	l, r, err := g.inner.Acquire(ctx, key, fp, ttl)
	if lose && err == nil {
		return nil, nil, lost("acquire")
	}
	return l, r, err
}

// Heartbeat renews at once, or, for the first renewal of an attempt whose
// plan says so, after a stall: the renewal is held on the app server (a
// stop-the-world pause of its renewal path) and sent when the stall ends,
// as if just made, so the engine's own timeout for it does not run during
// the stall. The stall is applied only when it ends before the attempt's
// function returns: the engine holds the execution's renewal lock across
// this call and takes it again when the function returns, and a goroutine
// blocked on a mutex would stop the bubble's clock for good.
func (g *gatedStore) Heartbeat(ctx context.Context, l *idem.Lease, ttl time.Duration) error {
	if a := actorOf(ctx); a != nil && a.plan != nil && a.plan.beatLag > 0 && !a.lagged.Load() &&
		time.Now().Add(a.plan.beatLag).UnixNano() < a.fnEnd.Load() {
		a.lagged.Store(true)
		g.w.fault(history.FaultPause, a, "renewal stalled "+a.plan.beatLag.String(), a.plan.beatLag)
		time.Sleep(a.plan.beatLag)
		ctx = context.WithoutCancel(ctx)
	}
	return g.inner.Heartbeat(ctx, l, ttl)
}

func (g *gatedStore) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, ret time.Duration) error {
	lose := g.turn(ctx, "complete")
	if err := g.inner.Complete(ctx, l, resp, ret); err != nil || !lose {
		return err
	}
	return lost("complete")
}

func (g *gatedStore) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, ret time.Duration) error {
	lose := g.turn(ctx, "fail")
	if err := g.inner.Fail(ctx, l, resp, ret); err != nil || !lose {
		return err
	}
	return lost("fail")
}

func (g *gatedStore) Release(ctx context.Context, l *idem.Lease) error {
	lose := g.turn(ctx, "release")
	if err := g.inner.Release(ctx, l); err != nil || !lose {
		return err
	}
	return lost("release")
}

func (g *gatedStore) Get(ctx context.Context, key string) (*idem.Record, error) {
	g.turn(ctx, "get")
	return g.inner.Get(ctx, key)
}

// ListStuck lists through the inner store's Lister and sorts the records
// by key: a store lists in its map order, which the seed does not decide.
func (g *gatedStore) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	g.turn(ctx, "list")
	l, ok := g.inner.(idem.Lister)
	if !ok {
		return nil, idem.ErrNoLister
	}
	recs, err := l.ListStuck(ctx, olderThan, limit)
	slices.SortFunc(recs, func(a, b *idem.Record) int { return cmp.Compare(a.Key, b.Key) })
	return recs, err
}

// Sweep sweeps through the inner store's Sweeper, if it has one.
func (g *gatedStore) Sweep(ctx context.Context) (int, error) {
	g.turn(ctx, "sweep")
	if s, ok := g.inner.(idem.Sweeper); ok {
		return s.Sweep(ctx)
	}
	return 0, nil
}

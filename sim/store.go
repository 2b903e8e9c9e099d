package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// loss is what happens to one store call: nothing, its reply is lost
// (the call took effect), or its request is lost (it did not).
type loss int

const (
	lossNone loss = iota
	lossReply
	lossRequest
)

// turn parks the caller until the scheduler gives it the turn, and says
// whether the reply or the request of this call is to be lost. The
// returned context carries the call's gate: the round trips the store
// makes inside the call are scheduling points too (RoundTrip).
func (g *gatedStore) turn(ctx context.Context, what string) (context.Context, loss) {
	a := actorOf(ctx)
	if a == nil {
		g.w.sch.park(-1, 0, what)
		return context.WithValue(ctx, gateKey{}, &gate{w: g.w, id: -1}), lossNone
	}
	g.w.sch.park(a.id, a.seq, what)
	a.steps++
	ctx = context.WithValue(ctx, gateKey{}, &gate{w: g.w, id: a.id, seq: a.seq, a: a, step: a.steps, what: what})
	if a.plan != nil && a.plan.loseStep == a.steps {
		if a.plan.loseReq {
			g.w.fault(faultLostReply, a, "request of "+what+" lost", 0)
			return ctx, lossRequest
		}
		g.w.fault(faultLostReply, a, "reply of "+what+" lost", 0)
		return ctx, lossReply
	}
	return ctx, lossNone
}

func lost(op string) error {
	return idem.MarkAmbiguous(idem.BackendError(op, errReplyLost))
}

// gateKey carries the gate of a store call in its context.
type gateKey struct{}

// gate is one gated store call: the world, the name it parks under, the
// actor (nil for none), which of its store calls this is, and the round
// trips made so far.
type gate struct {
	w          *world
	id         int
	seq        int64
	a          *actor
	step       int
	what       string
	roundTrips int
}

// RoundTrip is a scheduling point inside a store call: a store that talks
// to a server over a connection calls it (or lets its client library's
// hook call it) before each round trip. In a simulation the calling
// attempt waits there while the seed picks which waiting actor goes next,
// so a store call of several round trips interleaves with the others at
// every round trip, as it does in production. The first round trip of a
// call does not wait again (the call just got its turn), and neither does
// a lease renewal (see gatedStore.Heartbeat) or a call outside a
// simulation: there RoundTrip returns at once. The attempt's plan may hold
// a round trip of its outcome write (Faults.RoundTripStall) before it is
// sent.
//
// The store must make its round trips on the calling goroutine, one after
// the other: RoundTrip parks the caller, and a round trip started on
// another goroutine would run outside the seed's order.
func RoundTrip(ctx context.Context, what string) {
	g, _ := ctx.Value(gateKey{}).(*gate)
	if g == nil {
		return
	}
	g.roundTrips++
	if a := g.a; a != nil && a.plan != nil && a.plan.rtStall > 0 && g.step == 2 && g.roundTrips == a.plan.rtStallAt {
		g.w.fault(faultPause, a, fmt.Sprintf("round trip %d of %s (%s) stalled %s", g.roundTrips, g.what, what, a.plan.rtStall), a.plan.rtStall)
		time.Sleep(a.plan.rtStall)
		g.w.sch.park(g.id, g.seq, "rt:"+what)
		return
	}
	if g.roundTrips > 1 {
		g.w.sch.park(g.id, g.seq, "rt:"+what)
	}
}

func (g *gatedStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	ctx, lose := g.turn(ctx, "acquire")
	if lose == lossRequest {
		return nil, nil, lost("acquire")
	}
	l, r, err := g.inner.Acquire(ctx, key, fp, ttl)
	if lose == lossReply && err == nil {
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
	ctx, lose := g.turn(ctx, "complete")
	if lose == lossRequest {
		return lost("complete")
	}
	if err := g.inner.Complete(ctx, l, resp, ret); err != nil || lose == lossNone {
		return err
	}
	return lost("complete")
}

func (g *gatedStore) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, ret time.Duration) error {
	ctx, lose := g.turn(ctx, "fail")
	if lose == lossRequest {
		return lost("fail")
	}
	if err := g.inner.Fail(ctx, l, resp, ret); err != nil || lose == lossNone {
		return err
	}
	return lost("fail")
}

func (g *gatedStore) Release(ctx context.Context, l *idem.Lease) error {
	ctx, lose := g.turn(ctx, "release")
	if lose == lossRequest {
		return lost("release")
	}
	if err := g.inner.Release(ctx, l); err != nil || lose == lossNone {
		return err
	}
	return lost("release")
}

func (g *gatedStore) Get(ctx context.Context, key string) (*idem.Record, error) {
	ctx, _ = g.turn(ctx, "get")
	return g.inner.Get(ctx, key)
}

// ListStuck lists through the inner store's Lister and sorts the records
// by key: a store lists in its map order, which the seed does not decide.
func (g *gatedStore) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	ctx, _ = g.turn(ctx, "list")
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
	ctx, _ = g.turn(ctx, "sweep")
	if s, ok := g.inner.(idem.Sweeper); ok {
		return s.Sweep(ctx)
	}
	return 0, nil
}

var _ idem.UncertainStore = (*gatedStore)(nil)

// MarkUncertain records an uncertain outcome through the inner store, in
// a turn, with the attempt's lost reply or request like Complete. Only
// the engines of app servers without a recovery hook call it, and Run
// configures those only on stores that implement idem.UncertainStore.
func (g *gatedStore) MarkUncertain(ctx context.Context, l *idem.Lease, resp idem.Response, ret time.Duration) error {
	us, ok := g.inner.(idem.UncertainStore)
	if !ok {
		return idem.ErrNoUncertainStore
	}
	ctx, lose := g.turn(ctx, "uncertain")
	if lose == lossRequest {
		return lost("uncertain")
	}
	if err := us.MarkUncertain(ctx, l, resp, ret); err != nil || lose == lossNone {
		return err
	}
	// The store recorded the key uncertain and the engine will not know:
	// the history records what the store did (the checker's I9 needs the
	// moment the key became uncertain; only the simulation knows it).
	if a := actorOf(ctx); a != nil {
		now := g.w.now()
		g.w.record(history.Op{Kind: history.KindLease, Client: a.client, Worker: a.worker, Key: l.Key, Exec: a.exec,
			Call: now, Return: now, Token: uint64(l.Token), Transition: history.TransitionUncertain,
			Label: "recorded by the store, reply lost"})
	}
	return lost("uncertain")
}

// Resolve settles an uncertain record through the inner store, in a turn.
func (g *gatedStore) Resolve(ctx context.Context, key string, token idem.Token, applied *idem.Response, ret time.Duration) error {
	us, ok := g.inner.(idem.UncertainStore)
	if !ok {
		return idem.ErrNoUncertainStore
	}
	ctx, _ = g.turn(ctx, "resolve")
	return us.Resolve(ctx, key, token, applied, ret)
}

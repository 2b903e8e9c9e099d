package workload

import (
	"context"
	"sync/atomic"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// leaseCall is what the lease recorder knows about one Engine.Do call: whose
// call it is, which execution it may start, and the latest moments that
// certainly precede the next store call of the call's goroutine (floor) and
// of its execution's heartbeat (beatFloor).
type leaseCall struct {
	client    int
	key       string
	exec      string
	floor     atomic.Int64
	beatFloor atomic.Int64
}

type leaseCallKey struct{}

// withLeaseCall returns ctx carrying the identity of execution x's call, and
// fn wrapped so that the recorder learns when the function started and
// ended. start is a moment before the call reaches the engine.
func (d *driver) withLeaseCall(ctx context.Context, x *execution, start int64, fn idem.Func) (context.Context, idem.Func) {
	c := &leaseCall{client: x.client, key: x.key, exec: x.execID()}
	c.floor.Store(start)
	wrapped := func(ctx context.Context) (idem.Response, error) {
		c.beatFloor.Store(d.now()) // the heartbeat starts with the function
		resp, err := fn(ctx)
		c.floor.Store(d.now()) // the write that records the outcome comes after
		return resp, err
	}
	return context.WithValue(ctx, leaseCallKey{}, c), wrapped
}

// observeLease is the engine observer of a run: it records every lease
// step as a history.KindLease op on the run's timeline, except the answers
// that grant nothing (see FillLeaseOp).
//
// The op spans [floor, now]: now is read when the observer runs, after the
// store call returned; floor is the latest moment known to precede the
// store call: the observation before it on the same goroutine (the engine
// calls the observer synchronously, so its next store call comes later),
// the end of the function for the write that records its outcome, the
// start of the call for its first claim, the start of the function or the
// previous renewal for a heartbeat. The engine's own durations are not
// used: a process stopped (SIGSTOP, a long preemption) between the
// engine's clock reading and the observer would place the step later than
// it happened, and a later step can make I7 or I8 see an order that never
// was. A span too wide only hides an order; it never invents one.
func (d *driver) observeLease(ctx context.Context, ev idem.Event) {
	now := d.now()
	op, ok := completerOp(ctx, ev, now)
	if !ok {
		c, _ := ctx.Value(leaseCallKey{}).(*leaseCall)
		if b, ok := ctx.Value(batchCallsKey{}).(*batchCalls); ok && c == nil {
			c = b.lookup(ev)
		}
		if c == nil {
			return // not a call of this driver: no bound to place it by
		}
		var call int64
		if ev.Transition == idem.TransitionHeartbeat || ev.Transition == idem.TransitionHeartbeatRefused ||
			(ev.Transition == idem.TransitionBackendError && ev.Op == idem.OpHeartbeat) {
			call = c.beatFloor.Swap(now)
		} else {
			call = c.floor.Swap(now)
		}
		op = history.Op{
			Kind:   history.KindLease,
			Client: c.client,
			Worker: c.client,
			Key:    c.key,
			Exec:   c.exec,
			Call:   min(call, now),
			Return: now,
			Token:  uint64(ev.Token),
		}
	}
	if !FillLeaseOp(&op, ev) {
		return
	}
	d.rec.Record(op)
}

// FillLeaseOp sets the lease op op from the engine's lease step ev: its
// transition, and what the step carries (the previous token of a take-over
// or recovery, the store operation of a lost lease or backend error, the
// error of a backend error or refused heartbeat). It reports false, and
// leaves op alone, for the answers that grant nothing (replayed, conflict,
// mismatch): the call op already records them, and on hot keys they would
// double the history. The simulation (package sim) records its lease ops
// with it too.
func FillLeaseOp(op *history.Op, ev idem.Event) bool {
	switch ev.Transition {
	case idem.TransitionReplayed, idem.TransitionConflict, idem.TransitionMismatch:
		return false
	}
	op.Transition = history.Transition(ev.Transition.String())
	switch ev.Transition {
	case idem.TransitionTakenOver, idem.TransitionRecovered:
		op.PrevToken = uint64(ev.PrevToken)
	case idem.TransitionLeaseLost:
		op.Label = ev.Op
	case idem.TransitionBackendError:
		op.Label, op.Err = ev.Op, errText(ev.Err)
	case idem.TransitionHeartbeatRefused:
		op.Err = errText(ev.Err)
	}
	return true
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

package consume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// errCrash is the crash fault: the consumer dies where it is returned.
var errCrash = errors.New("consume: consumer crashed (fault)")

// errRunEnded is the handler's retryable error when the run ends (its
// timeout, or the caller's ctx) while the handler works: it stops at once
// and leaves no effect.
var errRunEnded = errors.New("consume: the run ended while the handler worked")

// runDoneKey carries the Done channel of a consumer's own context into
// the handler: the handler's context also ends when its lease is lost,
// and a handler that lost its lease goes on to write, for the fenced sink
// to refuse, as a stale writer would.
type runDoneKey struct{}

// withRunDone returns ctx carrying ctx.Done() as the run's end.
func withRunDone(ctx context.Context) context.Context {
	return context.WithValue(ctx, runDoneKey{}, ctx.Done())
}

// runDone returns the run's end that withRunDone put in ctx, or nil (never
// ready) when there is none.
func runDone(ctx context.Context) <-chan struct{} {
	done, _ := ctx.Value(runDoneKey{}).(<-chan struct{})
	return done
}

// work waits d, or less if done is closed first; it reports whether it
// waited all of d.
func work(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// settleTimeout bounds one settle call.
const settleTimeout = 5 * time.Second

// okResponse is the response Engine.Consume stores for a success; the
// effect sink keeps it for recovery.
var okResponse = idem.Response{Status: 200}

// callState is what one delivery's processing learned, passed down in its
// context to the handler, the recovery hook and the fault hook.
type callState struct {
	consumer  int
	ran       bool // the handler ran
	recovered bool // the recovery hook completed the key
	held      bool // an overlap hold stalled this copy before its effect
	token     idem.Token
	exec      string
}

type stateKey struct{}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	if st == nil {
		return &callState{consumer: -1}
	}
	return st
}

// poisonError is the permanent failure of a poison message. Its text is
// the failure response Engine.Consume stores.
func poisonError(key string) error { return idem.Permanent(fmt.Errorf("poison message %s", key)) }

func poisonDigest(key string) string {
	r := idem.Response{Status: 500, Body: []byte(poisonError(key).Error())}
	return history.RespDigest(&r)
}

// handle processes and settles one delivery and records it. It reports
// whether the consumer crashed: then nothing was settled.
func (n *node) handle(ctx context.Context, id int, d delivery) (crashed bool) {
	var m message
	_ = json.Unmarshal(d.body(), &m) // a bad body is the handler's business
	st := &callState{consumer: id}
	op := history.Op{Kind: history.KindCall, Client: id, Worker: id, Key: d.key(), Request: int64(m.N), Attempt: d.attempt(),
		FP: history.FingerprintID(idem.NewFingerprint(d.body())), Call: n.now()}
	a, err := d.process(context.WithValue(withRunDone(ctx), stateKey{}, st))
	op.Return = n.now()
	n.co.passed(d.key(), false)
	if errors.Is(err, errCrash) {
		op.Outcome, op.Return, op.Token, op.Exec = history.Unknown, history.NoReturn, uint64(st.token), st.exec
		op.Err = "consumer crashed after the effect, before the ack"
		n.co.record(op)
		n.co.delivered(d.redelivered(), abandoned, false)
		return true
	}
	outcome(&op, st, a, err, m.Poison)
	n.co.record(op)
	// Settle even when ctx ended meanwhile (a consumer restart): the
	// outcome is recorded, and an ack that may or may not go out would
	// only leave the run unsure whether the copy was settled.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	serr := d.settle(sctx, a, err)
	cancel()
	n.co.delivered(d.redelivered(), a, serr == nil)
	return false
}

// business is the handler: it applies the message's effect to the sink
// under the lease's token (token 0 without an engine).
func (n *node) business(ctx context.Context, body []byte) error {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return idem.Permanent(fmt.Errorf("bad payload: %w", err))
	}
	st := stateOf(ctx, m.Key)
	if n.engine == nil {
		st.held = n.co.hold(ctx, st.consumer, m.Key, 0) // with the engine: in the hook
	}
	if st.held {
		defer n.co.heldDone(m.Key)
	} else {
		n.co.passed(m.Key, true)
	}
	st.ran = true
	l, _ := idem.LeaseFrom(ctx)
	st.token = l.Token
	st.exec = "c" + strconv.Itoa(st.consumer) + "." + strconv.FormatInt(n.execs.Add(1), 10)
	if n.latency > 0 && !work(runDone(ctx), n.latency) {
		return errRunEnded
	}
	if m.Poison {
		return poisonError(m.Key)
	}
	op := history.Op{Kind: history.KindEffect, Client: st.consumer, Worker: st.consumer, Key: m.Key,
		Request: int64(m.N), Token: uint64(l.Token), Exec: st.exec}
	applied, err := n.co.apply(context.WithoutCancel(ctx), workload.Effect{Key: m.Key, Token: l.Token, Exec: st.exec, Response: okResponse}, op)
	if err != nil {
		return idem.MarkAmbiguous(err)
	}
	if !applied {
		return idem.Permanent(workload.ErrStale)
	}
	if n.engine == nil && n.co.takeCrash(m.Key) {
		return errCrash // broker-only: right after the effect, before the ack
	}
	return nil
}

// recover is the engine's recovery hook on the fenced sink.
func (n *node) recover(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
	resp, done, err := n.co.recoverKey(ctx, l.Key, l.Token)
	if done {
		st := stateOf(ctx, l.Key)
		st.recovered, st.token = true, l.Token
	}
	return resp, done, err
}

// hook aims the faults at their points: a crash after the effect, before
// the outcome is recorded and the message acked; a pause and an overlap
// hold before the effect, heartbeat stopped (a hold stays within half
// the lease). In a batch, the deliveries after a crash are not processed,
// and a worker process dies in the hook (see handleBatch).
func (n *node) hook(ctx context.Context, p idem.Point, l idem.Lease) error {
	bs := batchFrom(ctx)
	switch p {
	case idem.PointAfterAcquire:
		if bs != nil && bs.claim(l.Key) {
			return errCrash
		}
	case idem.PointAfterFn:
		if !n.co.takeCrash(l.Key) {
			return nil
		}
		if bs != nil {
			bs.crash()
			if n.killInHook {
				n.abandonBatch(bs)
				n.fault(history.FaultCrash, bs.consumer, "crash consumer %d after effect, before ack (%s, batch of %d)", bs.consumer, l.Key, len(bs.ds))
				n.ended(ctx, bs.consumer, true) // never returns
			}
		}
		return errCrash
	case idem.PointBeforeFn:
		st := stateOf(ctx, l.Key)
		n.co.pause(ctx, st.consumer, l.Key, l.Token)
		if n.co.hold(ctx, st.consumer, l.Key, l.Token) {
			st.held = true
		}
	}
	return nil
}

// outcome fills in the call op of one processed delivery.
func outcome(op *history.Op, st *callState, a idem.Decision, err error, poison bool) {
	op.Token = uint64(st.token)
	op.Exec = st.exec
	if err != nil {
		op.Err = err.Error()
	}
	switch {
	case a == idem.Ack && err == nil && (st.ran || st.recovered):
		op.Outcome, op.Resp = history.Executed, history.RespDigest(&okResponse)
	case a == idem.Ack && err == nil && poison:
		op.Outcome, op.Resp, op.Token = history.Failed, poisonDigest(op.Key), 0 // replay of the stored failure
	case a == idem.Ack && err == nil:
		op.Outcome, op.Resp, op.Token = history.Replayed, history.RespDigest(&okResponse), 0
	case a == idem.DeadLetter && st.ran && idem.IsPermanent(err) && poison:
		op.Outcome, op.Resp = history.Failed, poisonDigest(op.Key)
	case errors.Is(err, idem.ErrFingerprintMismatch):
		op.Outcome = history.Mismatch
	case errors.Is(err, idem.ErrInvalidKey):
		op.Outcome = history.Error
	case errors.Is(err, idem.ErrInProgress):
		op.Outcome, op.Token = history.InProgress, 0
	case errors.Is(err, idem.ErrLeaseLost):
		op.Outcome = history.LeaseLost
	default:
		op.Outcome, op.Return = history.Unknown, history.NoReturn
	}
}

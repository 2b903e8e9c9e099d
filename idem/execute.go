package idem

import (
	"context"
	"errors"
	"fmt"
)

// FinishKind says which fenced write records an execution's outcome.
type FinishKind uint8

// The fenced writes that end an execution.
const (
	FinishComplete  FinishKind = iota + 1 // Store.Complete
	FinishFail                            // Store.Fail
	FinishRelease                         // Store.Release
	FinishUncertain                       // UncertainStore.MarkUncertain
)

// String returns "complete", "fail", "release", "uncertain" or "finish(N)".
func (k FinishKind) String() string {
	switch k {
	case FinishComplete:
		return OpComplete
	case FinishFail:
		return OpFail
	case FinishRelease:
		return OpRelease
	case FinishUncertain:
		return OpUncertain
	}
	return fmt.Sprintf("finish(%d)", uint8(k))
}

// outcome is what an execution decided: the write that records it (kind 0:
// none, the execution ended without touching the store again) and what Do
// returns once the write is done.
type outcome struct {
	kind  FinishKind
	resp  Response // what the write stores
	res   Result
	fnErr error // returned with a successful write (fn's error, or the size error)
	err   error // kind 0: the error Do returns
	tm    timing
}

// execute runs fn under lease l and records the outcome with one store call.
func (e *Engine) execute(ctx context.Context, l *Lease, fn Func, tm timing) (Result, error) {
	o := e.run(ctx, l, fn, tm)
	if o.kind == 0 {
		return o.res, o.err
	}
	return e.recorded(ctx, l, &o, e.write(ctx, l, &o))
}

// run takes an execution up to the write that records it: fault points,
// recovery after a take-over, fn under a heartbeat, and the classification
// of fn's error (see Do). A panic in fn releases the key and continues.
func (e *Engine) run(ctx context.Context, l *Lease, fn Func, tm timing) outcome {
	o := outcome{res: Result{Token: l.Token}, tm: tm}
	if o.err = e.at(ctx, PointAfterAcquire, l); o.err != nil {
		return o
	}
	if l.PrevToken != 0 && e.cfg.recovery != nil {
		done, err := e.recover(ctx, l, &o)
		if err != nil {
			o.err = fmt.Errorf("idem: recovery of %q: %w", l.Key, err)
			return o
		}
		if done {
			return o
		}
	}
	if l.PrevToken != 0 && e.cfg.takeOverUncertain && e.markUncertain(&o, Response{},
		fmt.Errorf("idem: key %q taken over from token %d, which may have performed the effect", l.Key, l.PrevToken)) {
		return o
	}
	if o.err = e.at(ctx, PointBeforeFn, l); o.err != nil {
		return o
	}

	x := e.startExecution(ctx, l)
	panicked := true
	defer func() {
		if panicked {
			x.stop()
			o.tm.ranFn(e.now())
			o.kind = FinishRelease
			_ = e.write(ctx, l, &o)
		}
	}()
	resp, ferr := fn(x)
	panicked = false
	x.stop()
	o.tm.ranFn(e.now())

	if o.err = e.at(ctx, PointAfterFn, l); o.err != nil {
		return o
	}
	switch {
	case ferr == nil:
		e.succeeded(&o, resp)
	case !e.cfg.permanent(ferr) && Ambiguous(ferr):
		// fn cannot tell whether its side effect happened. Releasing
		// would let the next attempt run it again as a fresh execution.
		// Without a recovery hook the key is recorded uncertain, for an
		// operator to settle; with one (or with a store that cannot
		// record it) the key stays in progress until the lease expires,
		// and the next attempt takes it over (with PrevToken set), so
		// WithRecovery can find out.
		if !e.markUncertain(&o, resp, ferr) {
			o.err = ferr
		}
	case !e.cfg.permanent(ferr):
		o.kind, o.fnErr = FinishRelease, ferr
	default:
		o.res.Failed, o.res.Response = true, resp
		e.failed(&o, resp, ferr)
	}
	return o
}

// recover asks the recovery hook whether the holder that l took over
// already performed the effect. If so (done), o is set to store the hook's
// response, with Result.Recovered. A hook error is told to the observer and
// returned.
func (e *Engine) recover(ctx context.Context, l *Lease, o *outcome) (done bool, err error) {
	resp, done, err := e.cfg.recovery(ctx, *l)
	o.tm.mark = e.now()
	if err != nil {
		e.observeWrite(ctx, 0, OpRecover, l, err, o.tm)
		return false, err
	}
	if done {
		if e.observing() {
			e.cfg.observer(ctx, Event{Transition: TransitionRecovered, Key: l.Key, Token: l.Token, PrevToken: l.PrevToken, Claim: o.tm.claim})
		}
		o.res.Recovered = true
		e.succeeded(o, resp)
	}
	return done, nil
}

// succeeded sets o to store resp as completed, or as a failure when resp is
// above the size cap (Do then returns ErrResponseTooLarge).
func (e *Engine) succeeded(o *outcome, resp Response) {
	o.res.Response = resp
	if serr := resp.CheckSize(e.cfg.maxResponse); serr != nil {
		o.res.Failed = true
		e.failed(o, resp, serr)
		return
	}
	o.kind, o.resp = FinishComplete, resp
}

// failed sets o to store resp as a permanent failure; a response above the
// size cap is replaced by a 500 that names the reason.
func (e *Engine) failed(o *outcome, resp Response, fnErr error) {
	if err := resp.CheckSize(e.cfg.maxResponse); err != nil {
		resp = Response{Status: 500, Body: []byte(err.Error())}
	}
	o.kind, o.resp, o.fnErr = FinishFail, resp, fnErr
}

// write makes o's fenced write with one store call and tells the observer.
func (e *Engine) write(ctx context.Context, l *Lease, o *outcome) error {
	fctx, cancel := e.finishCtx(ctx)
	defer cancel()
	var err error
	switch o.kind {
	case FinishComplete:
		err = e.ops.Complete(fctx, l, o.resp, e.cfg.retention)
	case FinishFail:
		err = e.ops.Fail(fctx, l, o.resp, e.cfg.retention)
	case FinishRelease:
		err = e.ops.Release(fctx, l)
	case FinishUncertain:
		err = e.uncertainStore().MarkUncertain(fctx, l, o.resp, e.cfg.retention)
	}
	e.observeFinish(ctx, l, o, err)
	return err
}

// observeFinish tells the observer how o's write ended.
func (e *Engine) observeFinish(ctx context.Context, l *Lease, o *outcome, err error) {
	if !e.observing() {
		return
	}
	ok := TransitionReleased
	switch o.kind {
	case FinishComplete:
		ok = TransitionCompleted
	case FinishFail:
		ok = TransitionFailed
	case FinishUncertain:
		ok = TransitionUncertain
	}
	e.observeWrite(ctx, ok, o.kind.String(), l, err, o.tm)
}

// recorded returns what Do returns once o's write ended with err.
func (e *Engine) recorded(ctx context.Context, l *Lease, o *outcome, err error) (Result, error) {
	if err != nil {
		werr := fmt.Errorf("idem: %s %q: %w", o.kind, l.Key, err)
		if o.fnErr != nil {
			return o.res, errors.Join(o.fnErr, werr)
		}
		return o.res, werr
	}
	if o.kind != FinishRelease {
		if err := e.at(ctx, PointAfterComplete, l); err != nil {
			return o.res, err
		}
	}
	return o.res, o.fnErr
}

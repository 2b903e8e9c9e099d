package workload

import (
	"context"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// client sends deliveries one at a time and retries them per the policy.
// It is owned by one goroutine.
type client struct {
	d       *driver
	id      int
	rng     *rand.Rand // per-call draws: latency, failure, jitter
	calls   int64      // numbers the executions this client starts
	pending map[string]int64
	last    string // key of the last delivery, probed as a sample
	lastSeq int64
	timer   *time.Timer
	att     Attempt // reused by every attempt
}

func (d *driver) newClient(id int) *client {
	id += d.cfg.ClientBase
	return &client{
		d:       d,
		id:      id,
		rng:     rand.New(rand.NewPCG(uint64(d.cfg.Seed), 1<<40|uint64(id))),
		pending: make(map[string]int64),
	}
}

// deliver sends one delivery until it gets a final answer, runs out of
// attempts, or the drain deadline passes. A delivery that ends without a
// final answer, or that saw an unknown or lease_lost call on the way,
// marks its key for the liveness probe.
func (c *client) deliver(ctx context.Context, dl delivery) {
	c.d.deliveries.Add(1)
	r := &c.d.cfg.Retry
	c.last, c.lastSeq = dl.key, dl.seq
	for n := 1; ; n++ {
		o, fin := c.attempt(ctx, dl, n)
		if fin {
			return
		}
		if o == history.Unknown || o == history.LeaseLost {
			// A crash, a timeout or a lost lease: the key is one a
			// broken store could leave stuck.
			c.pending[dl.key] = dl.seq
		}
		if n >= r.MaxAttempts || ctx.Err() != nil || c.d.pastDrain() {
			// The delivery ends without an answer: the liveness probe
			// must find its key usable.
			c.pending[dl.key] = dl.seq
			return
		}
		c.sleep(ctx, c.backoff(n))
	}
}

// attempt makes attempt n of dl through the run's target, records it and
// returns its outcome and whether it was final.
func (c *client) attempt(ctx context.Context, dl delivery, n int) (history.Outcome, bool) {
	c.calls++
	d := c.d
	c.att = Attempt{
		Key: dl.key, Seq: dl.seq, Request: dl.req, Mismatch: dl.mismatch, N: n,
		Client: c.id, Calls: c.calls, Timeout: d.cfg.Retry.Timeout, Rand: c.rng,
	}
	if n == 1 {
		c.att.Intended = dl.intended
	}
	op, fin := d.target.Attempt(ctx, &c.att)
	op.Kind, op.Client, op.Worker, op.Key = history.KindCall, c.id, c.id, dl.key
	op.Request, op.Attempt, op.Intended = dl.req, n, c.att.Intended
	end := op.Return
	if end == history.NoReturn {
		end = d.now()
	}
	d.observe(&op, end)
	d.rec.Record(op)
	return op.Outcome, fin
}

// final reports whether a call outcome ends a delivery: the client got an
// answer it will not retry.
func final(o history.Outcome) bool {
	switch o {
	case history.Executed, history.Replayed, history.Failed, history.Mismatch:
		return true
	}
	return false
}

// backoff returns the wait after attempt n: Backoff doubled per attempt up
// to MaxBackoff, minus a random Jitter fraction.
func (c *client) backoff(n int) time.Duration {
	r := &c.d.cfg.Retry
	if r.Backoff < 0 {
		return 0
	}
	d := r.Backoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	if r.Jitter > 0 {
		d -= time.Duration(c.rng.Float64() * r.Jitter * float64(d))
	}
	return d
}

func (c *client) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		c.timer.Stop()
	case <-c.timer.C:
	}
}

// engineTarget is the Target of a run without Config.Target: the engine
// in this process on Config.Store, with the business function applying its
// effects to Config.Sink.
type engineTarget struct{ d *driver }

// Attempt makes one Engine.Do call. With a client timeout the call runs on
// its own goroutine so that the client can give up on it, as a real client
// closes its connection; the call goes on, as a server that does not
// notice would.
func (t engineTarget) Attempt(ctx context.Context, a *Attempt) (history.Op, bool) {
	d := t.d
	x := d.newExecution(a)
	fp, fpID := fingerprint(a.Key, a.Mismatch)
	op := history.Op{FP: fpID}
	fn := d.business(x)
	var res idem.Result
	var err error
	op.Call = d.now()
	if a.Timeout <= 0 {
		res, err = d.do(ctx, x, fp, fn)
	} else {
		done := make(chan struct{})
		var cres idem.Result
		var cerr error
		d.inflight.Go(func() {
			cres, cerr = d.do(ctx, x, fp, fn)
			close(done)
		})
		tm := time.NewTimer(a.Timeout)
		select {
		case <-done:
			tm.Stop()
			res, err = cres, cerr
		case <-tm.C:
			op.Return = history.NoReturn
			op.Outcome = history.Unknown
			op.Err = "client timeout after " + a.Timeout.String()
			return op, false
		}
	}
	op.Return = d.now()
	classify(&op, res, err, x)
	return op, final(op.Outcome)
}

// observe passes the latency of the call op, ended at end, to the live
// histogram when there is one: from the intended send time when the call
// had one (open loop), else from the call.
func (d *driver) observe(op *history.Op, end int64) {
	if d.cfg.Live == nil {
		return
	}
	start := op.Call
	if op.Intended != 0 {
		start = op.Intended
	}
	d.cfg.Live.Observe(time.Duration(end - start))
}

// classify sets the outcome, token, response and error of a call op from
// what Do returned (see ClassifyCall), and the execution: the one the
// response names, else x's when its function ran.
func classify(op *history.Op, res idem.Result, err error, x *execution) {
	ClassifyCall(op, res, err)
	if op.Outcome.HasResponse() {
		op.Resp = respID(&res.Response)
		op.Exec = execOf(&res.Response)
	} else if x.ran {
		op.Exec = x.id
	}
}

// ClassifyCall sets the outcome and token of a call op from what
// Engine.Do returned, its error text, and for an unknown outcome no return
// time (history.NoReturn). Anything it cannot place is unknown: an outcome
// that may have taken effect is never recorded as failed. A business error
// marked Retryable is a released call. The caller records the response
// (Op.Resp, Op.Exec) when the outcome has one (Outcome.HasResponse). The
// simulation (package sim) classifies its calls with it too.
func ClassifyCall(op *history.Op, res idem.Result, err error) {
	switch {
	case err == nil && res.Replayed && res.Failed:
		op.Outcome = history.Failed
	case err == nil && res.Replayed:
		op.Outcome = history.Replayed
	case err == nil && !res.Failed:
		op.Outcome = history.Executed
		op.Token = uint64(res.Token)
	case errors.Is(err, idem.ErrAborted), errors.Is(err, idem.ErrUncertain):
		// A crash: the client got no answer; an uncertain key answers
		// nothing until it is resolved.
		op.Outcome = history.Unknown
	case errors.Is(err, idem.ErrLeaseLost):
		op.Outcome = history.LeaseLost
		op.Token = uint64(res.Token)
	case errors.Is(err, idem.ErrBackend), idem.Ambiguous(err),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		op.Outcome = history.Unknown
	case errors.Is(err, idem.ErrInProgress):
		op.Outcome = history.InProgress
	case errors.Is(err, idem.ErrFingerprintMismatch):
		op.Outcome = history.Mismatch
	case res.Failed:
		op.Outcome = history.Failed
		op.Token = uint64(res.Token)
	case isRetryable(err):
		op.Outcome = history.Released
		op.Token = uint64(res.Token)
	case errors.Is(err, idem.ErrInvalidKey):
		op.Outcome = history.Error
	default:
		op.Outcome = history.Unknown
	}
	if op.Outcome == history.Unknown {
		op.Return = history.NoReturn
	}
	if err != nil {
		op.Err = err.Error()
	}
}

// respID is the short digest of a response recorded in Op.Resp.
func respID(r *idem.Response) string {
	d := r.Digest()
	return hex.EncodeToString(d[:8])
}

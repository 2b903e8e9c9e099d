package sim

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

func newRand(seed int64, stream int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(int64(stream))+1<<40))
}

// client sends one request at a time and retries it; its choices come
// from its own random stream. Each attempt goes to an app server the seed
// picks, as a load balancer would send it.
type client struct {
	w       *world
	id      int
	rng     *rand.Rand
	seq     int64 // attempts started, copies and probes included
	n       int64 // requests started
	pending []string
}

func (w *world) newClient(id int) *client {
	return &client{w: w, id: id, rng: newRand(w.cfg.Seed, id)}
}

// A client's own goroutine does not wait for a turn after it sleeps or
// after its attempts return: until its attempts reach the store it touches
// only its own state (its random stream, its counters).

// loop sends requests until the traffic duration is over.
func (c *client) loop() {
	cfg := &c.w.cfg
	for {
		d := time.Duration(c.rng.ExpFloat64() * float64(cfg.Interval))
		if time.Duration(c.w.now())+d >= cfg.Duration {
			return
		}
		time.Sleep(d)
		c.n++
		c.request("c"+strconv.Itoa(c.id)+"-"+strconv.FormatInt(c.n, 10), int64(c.id)<<32|c.n)
	}
}

// request delivers one request until it gets a final answer or runs out of
// attempts; a request left without a final answer is probed at the end.
// (A request that got one is not probed even if an attempt on the way was
// unsure: its record is stored, and a probe after the record's retention
// would run it again as a new request, which the checker can only tell
// apart from a double execution when it saw the commit.)
func (c *client) request(key string, req int64) {
	cfg := &c.w.cfg
	fp := idem.FingerprintString(key, "req")
	backoff := cfg.Backoff
	for n := 1; ; n++ {
		final, held := c.attempt(key, req, n, fp)
		if final {
			if c.rng.Float64() < cfg.Faults.Mismatch {
				c.reuse(key, req)
			}
			return
		}
		if held || n >= cfg.MaxAttempts {
			// Out of attempts, or the key is held uncertain for an
			// operator (retrying cannot help): the probe asks at the end.
			c.pending = append(c.pending, key)
			return
		}
		time.Sleep(backoff - time.Duration(c.rng.Float64()*0.5*float64(backoff)))
		backoff = min(2*backoff, cfg.MaxBackoff)
	}
}

// attempt makes attempt n, possibly with a copy sent at about the same
// time, and reports whether one of them got a final answer, and whether
// one found the key held uncertain by an earlier execution. The client
// waits for each call up to its timeout; a call it gives up on is
// recorded as unknown and goes on without it, as a server that does not
// notice the client left.
func (c *client) attempt(key string, req int64, n int, fp idem.Fingerprint) (final, held bool) {
	cfg := &c.w.cfg
	f := &cfg.Faults
	copies := 1
	var gap time.Duration
	if c.rng.Float64() < f.Copies {
		copies = 2
		if f.CopyGap > 0 && c.rng.IntN(2) == 1 { // else both at one instant
			gap = time.Duration(c.rng.Int64N(int64(f.CopyGap)))
		}
	}
	calls := make([]*pendingCall, copies)
	for i := range copies {
		c.seq++
		a := &actor{id: c.id, seq: c.seq, client: c.id, worker: c.rng.IntN(len(c.w.apps)), key: key,
			exec: strconv.Itoa(c.id) + "." + strconv.FormatInt(c.seq, 10), plan: c.w.drawPlan(c.rng)}
		pc := &pendingCall{done: make(chan struct{})}
		calls[i] = pc
		delay := time.Duration(i) * gap
		c.w.inflight.Go(func() { c.call(a, req, n, fp, delay, false, pc) })
	}
	deadline := time.Now().Add(cfg.Timeout)
	for _, pc := range calls {
		if cfg.Timeout > 0 && !c.wait(pc, deadline) {
			continue
		}
		switch pc.out {
		case history.Executed, history.Replayed, history.Failed, history.Mismatch:
			final = true
		}
		held = held || pc.held
	}
	return final, held
}

// pendingCall is one call a client waits for. finished and abandoned
// are decided under mu, in a turn of the scheduler, so which of the call
// and the client's timeout came first is the seed's choice.
type pendingCall struct {
	done      chan struct{}
	mu        sync.Mutex
	call      int64 // when the call was sent
	finished  bool  // Do returned and the call was recorded
	abandoned bool  // the client gave up first
	out       history.Outcome
	held      bool // the key was found uncertain (idem.ErrUncertain on a replay)
}

// wait waits for pc until deadline and reports whether it finished; a
// call still running then is recorded as unknown and abandoned.
func (c *client) wait(pc *pendingCall, deadline time.Time) bool {
	select {
	case <-pc.done:
		// Finished already: a select that also saw an expired timer
		// would pick one of the two at random.
		return true
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-pc.done:
		return true
	case <-t.C:
	}
	c.w.sch.park(c.id, 0, "timeout")
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.finished {
		return true
	}
	pc.abandoned = true
	return false
}

// probe asks once for every key the client left without a final answer:
// after the faults, each must be usable (I6), or held uncertain. Probes go
// to app servers with a recovery hook: a probe that took over a dead
// holder's key on a server without one would record the key uncertain
// itself, at the probe's own instant, and the checker withdraws a stuck
// probe only when the key was uncertain before it.
func (c *client) probe() {
	servers := 0
	for _, a := range c.w.apps {
		if !a.noRecovery {
			servers++
		}
	}
	for _, key := range c.pending {
		c.seq++
		a := &actor{id: c.id, seq: c.seq, client: c.id, worker: c.rng.IntN(servers), key: key,
			exec: "p" + strconv.Itoa(c.id) + "." + strconv.FormatInt(c.seq, 10), plan: &plan{}}
		c.call(a, 0, 0, idem.FingerprintString(key, "req"), 0, true, &pendingCall{done: make(chan struct{})})
	}
}

// reuse sends one request with another body under key, which already has
// its answer: a client that reuses a key for a different request. The
// store must refuse it (mismatch), never replay the other request's
// answer.
func (c *client) reuse(key string, req int64) {
	c.seq++
	a := &actor{id: c.id, seq: c.seq, client: c.id, worker: c.rng.IntN(len(c.w.apps)), key: key,
		exec: strconv.Itoa(c.id) + "." + strconv.FormatInt(c.seq, 10), plan: c.w.drawPlan(c.rng)}
	pc := &pendingCall{done: make(chan struct{})}
	c.w.inflight.Go(func() { c.call(a, req, 1, idem.FingerprintString(key, "other"), 0, false, pc) })
	if c.w.cfg.Timeout > 0 {
		c.wait(pc, time.Now().Add(c.w.cfg.Timeout))
	} else {
		<-pc.done
	}
}

// call makes one Engine.Do call as actor a and records it, unless the
// client gave up on it first: then the client recorded it as unknown.
func (c *client) call(a *actor, req int64, n int, fp idem.Fingerprint, delay time.Duration, probe bool, pc *pendingCall) {
	w := c.w
	time.Sleep(delay) // a copy's gap; the call waits for its turn at the store
	ctx := context.WithValue(context.Background(), actorKey{}, a)
	ran := false
	op := history.Op{Kind: history.KindCall, Client: a.client, Worker: a.worker, Key: a.key, Request: req, Attempt: n,
		FP: history.FingerprintID(fp), Probe: probe, Call: w.now()}
	pc.mu.Lock()
	pc.call = op.Call
	pc.mu.Unlock()
	res, err := w.apps[a.worker].eng.Do(ctx, a.key, fp, func(ctx context.Context) (idem.Response, error) {
		ran = true
		return w.business(ctx, a, req, n)
	})
	op.Return = w.now()
	pc.mu.Lock()
	defer close(pc.done)
	defer pc.mu.Unlock()
	if pc.abandoned {
		op.Return, op.Outcome, op.Err = history.NoReturn, history.Unknown, "client timeout after "+w.cfg.Timeout.String()
		if ran {
			op.Exec = a.exec
		}
		w.record(op)
		return
	}
	workload.ClassifyCall(&op, res, err)
	if op.Outcome.HasResponse() {
		op.Resp = history.RespDigest(&res.Response)
		op.Exec = execOf(res.Response.Body)
	} else if ran {
		op.Exec = a.exec
	}
	w.record(op)
	pc.finished, pc.out = true, op.Outcome
	pc.held = res.Replayed && errors.Is(err, idem.ErrUncertain)
}

// business is the function every call runs: it works for the drawn time,
// fails if the plan says so, else applies its effect to the sink. Its
// errors are the workload's business errors (workload.ErrRetryable and the
// others), as the load driver's business function returns them.
func (w *world) business(ctx context.Context, a *actor, req int64, n int) (idem.Response, error) {
	p := a.plan
	a.fnEnd.Store(time.Now().Add(p.work).UnixNano())
	if p.work > 0 {
		time.Sleep(p.work)
		w.sch.park(a.id, a.seq, "effect")
	}
	switch p.fail {
	case 1:
		return idem.Response{}, workload.Retryable(workload.ErrRetryable)
	case 2:
		return response(422, "failed", a), idem.Permanent(workload.ErrPermanent)
	}
	l, _ := idem.LeaseFrom(ctx)
	resp := response(200, "ok", a)
	if p.ambiguous == 2 {
		// The request to the provider was lost: no effect, and the
		// function cannot tell.
		w.fault(faultLostReply, a, "business request lost (no effect)", 0)
		return idem.Response{}, idem.MarkAmbiguous(workload.ErrAmbiguous)
	}
	applied := w.sink.apply(a.key, l.Token, resp)
	now := w.now()
	op := history.Op{Kind: history.KindEffect, Client: a.client, Worker: a.worker, Key: a.key, Request: req, Attempt: n,
		Token: uint64(l.Token), Exec: a.exec, Call: now, Return: now, Applied: applied}
	if !applied {
		op.Err = workload.ErrStale.Error()
	}
	w.record(op)
	if !applied {
		return response(409, "stale", a), idem.Permanent(workload.ErrStale)
	}
	if p.ambiguous == 1 {
		// The provider applied the effect and its answer was lost.
		w.fault(faultLostReply, a, "business reply lost (effect applied)", 0)
		return idem.Response{}, idem.MarkAmbiguous(workload.ErrAmbiguous)
	}
	return resp, nil
}

// response is what the business answers: for a success 201 Created with
// Location, ETag and Content-Type headers and a JSON body, for a failure
// its own status with a problem body. Every body names the execution,
// which execOf reads back. Replays must reproduce all of it (I3).
func response(status int, word string, a *actor) idem.Response {
	body := []byte(`{"status":"` + word + `","key":"` + a.key + `","exec":"` + a.exec + `"}`)
	if status == 200 {
		return idem.Response{Status: 201, Body: body, Header: map[string][]string{
			"Content-Type": {"application/json"},
			"Etag":         {`"` + a.exec + `"`},
			"Location":     {"/payments/" + a.key},
		}}
	}
	return idem.Response{Status: status, Body: body, Header: map[string][]string{"Content-Type": {"application/problem+json"}}}
}

// execOf returns the execution a response body names ("exec":"…").
func execOf(body []byte) string {
	const field = `"exec":"`
	i := bytes.Index(body, []byte(field))
	if i < 0 {
		return ""
	}
	rest := body[i+len(field):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

// observe records every lease step of the engines as a lease op, except
// the answers that grant nothing (the call op records them).
func (w *world) observe(ctx context.Context, ev idem.Event) {
	a := actorOf(ctx)
	if a == nil {
		return
	}
	now := w.now()
	op := history.Op{Kind: history.KindLease, Client: a.client, Worker: a.worker, Key: ev.Key, Exec: a.exec,
		Call: now, Return: now, Token: uint64(ev.Token)}
	if !workload.FillLeaseOp(&op, ev) {
		return
	}
	w.record(op)
	if ev.Transition == idem.TransitionCompleted && a.plan == nil && a.recovered != nil {
		// A completer stored the response the recovery hook found: to the
		// key model that is an execution whose effect came first.
		fp := idem.FingerprintString(ev.Key, "req")
		w.record(history.Op{Kind: history.KindCall, Client: a.client, Worker: a.worker, Key: ev.Key,
			FP: history.FingerprintID(fp), Call: now, Return: now, Outcome: history.Executed, Token: uint64(ev.Token),
			Resp: history.RespDigest(a.recovered), Exec: execOf(a.recovered.Body)})
		a.recovered = nil
	}
}

// recovery is every engine's recovery hook: after a take-over it fences
// the sink and asks whether the previous holder's effect happened.
func (w *world) recovery(ctx context.Context, l idem.Lease) (idem.Response, bool, error) {
	if a := actorOf(ctx); a != nil {
		w.sch.park(a.id, a.seq, "recover")
	}
	resp, done := w.sink.recoverKey(l.Key, l.Token)
	if a := actorOf(ctx); a != nil && a.plan == nil && done {
		a.recovered = &resp
	}
	return resp, done, nil
}

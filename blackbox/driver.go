package blackbox

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// The load is driven by package workload's driver, the one `idembench run`
// uses: the same keys, copies, pacing and retries for one scenario. What
// one attempt does here is an HTTP request (httpTarget).

// httpTarget is the workload.Target of a black-box run: it renders the
// operation for an attempt's key, sends it, and classifies the answer. It
// also collects what the oracles and the report need: the resource ids of
// successes and a tally of the other answers.
type httpTarget struct {
	spec   *Spec
	op     *Operation
	client *http.Client
	base   string // where requests go (the fault proxy or the service)
	svc    *Fields
	rec    *history.Recorder // for the probe's calls, which it records itself
	now    func() int64
	faults *runFaults

	keys  *keyTable // resource ids of successes
	tally *answerTally
}

// resourceAnswer is one success with the resource id it named.
type resourceAnswer struct {
	key, id, resp string
	call, ret     int64
}

// config returns the workload configuration that drives t with spec's
// load, recording into rec.
func (t *httpTarget) config(prefix string, faults workload.Faults) workload.Config {
	s := t.spec
	keys := s.Keys
	keys.Prefix = prefix
	return workload.Config{
		Seed: s.Seed, Duration: s.Duration, Clients: s.Clients, Rate: s.Rate,
		Keys: keys, Retry: s.Retry, Target: t, Faults: faults, Recorder: t.rec, Now: t.now,
	}
}

// Attempt sends one attempt of a delivery (workload.Target).
func (t *httpTarget) Attempt(ctx context.Context, a *workload.Attempt) (history.Op, bool) {
	f := t.op.fields(t.spec.Seed, a.Key, a.Seq, a.Mismatch, t.svc)
	r, err := t.op.build(&f)
	if err != nil { // Validate rendered the templates; cannot happen
		now := t.now()
		return history.Op{Call: now, Return: now, Outcome: history.Error, Err: err.Error()}, true
	}
	return t.send(ctx, &r, a.Key, a.Timeout)
}

// probeTimeout is the least time a liveness probe waits for its answer.
const probeTimeout = 5 * time.Second

// send sends r with key and the client timeout, and returns its call op
// (FP, Call, Return, Outcome, Resp, Err, Label) and whether the answer was
// final.
func (t *httpTarget) send(ctx context.Context, r *request, key string, timeout time.Duration) (history.Op, bool) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, timeout)
	}
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer bodyBufs.Put(buf)
	call := t.now()
	a := send(actx, t.client, t.base, r, t.op.KeyHeader, key, nil, "", buf)
	ret := t.now()
	cancel()
	out, final, declared := t.op.classify(&a)
	if !out.Success() {
		t.tally.add(&a, declared)
	}
	op := history.Op{FP: r.fp, Call: call, Return: ret, Outcome: out}
	if out.HasResponse() {
		op.Resp = digest(a.status, a.body)
	}
	if a.err != nil {
		op.Err = a.err.Error()
	} else if !declared {
		op.Err = "HTTP " + strconv.Itoa(a.status) + ": a status the target does not declare"
	} else if !out.Success() && out != history.Failed {
		op.Err = "HTTP " + strconv.Itoa(a.status)
	}
	if out.Success() {
		if id := t.op.resourceID(&a); id != "" {
			op.Label = "resource " + id
			t.keys.addID(resourceAnswer{key: key, id: id, resp: op.Resp, call: call, ret: ret})
		} else if t.op.ResourceID == "" {
			t.keys.addID(resourceAnswer{key: key, id: op.Resp, resp: op.Resp, call: call, ret: ret})
		}
	}
	return op, final
}

// Probe waits Spec.ProbeAfter, then calls every key once more, with Probe
// set, at most Spec.Clients at a time (workload.Target). A run whose faults
// left the service down probes nothing: the run ends with that error.
func (t *httpTarget) Probe(ctx context.Context, keys []workload.ProbeKey) error {
	if t.faults != nil && errors.Is(t.faults.err, ErrEnvironment) {
		return nil
	}
	tm := time.NewTimer(t.spec.ProbeAfter)
	select {
	case <-tm.C:
	case <-ctx.Done():
		tm.Stop()
		return ctx.Err()
	}
	return workload.FanOut(ctx, len(keys), t.spec.Clients, func(w, i int) {
		t.probe(ctx, t.spec.Clients+1+w, keys[i])
	})
}

// probe makes the liveness call of one key and records it.
func (t *httpTarget) probe(ctx context.Context, client int, k workload.ProbeKey) {
	f := t.op.fields(t.spec.Seed, k.Key, k.Seq, false, t.svc)
	r, err := t.op.build(&f)
	if err != nil {
		return
	}
	// Liveness asks for an answer, not a fast one.
	op, _ := t.send(ctx, &r, k.Key, max(t.spec.Retry.Timeout, probeTimeout))
	op.Kind, op.Client, op.Worker, op.Key, op.Attempt, op.Probe = history.KindCall, client, client, k.Key, 1, true
	t.rec.Record(op)
}

// runFaults runs a black-box run's fault schedule as the workload's
// injector: started with the traffic, stopped (healed) once it has
// drained, before the liveness probe.
type runFaults struct {
	fr  *faultRunner
	ctx context.Context
	err error // from stop
}

func (f *runFaults) Start()                         { f.fr.start(f.ctx) }
func (f *runFaults) Hook() idem.Hook                { return nil }
func (f *runFaults) ForcedFailure(idem.Lease) error { return nil }
func (f *runFaults) Stop()                          { f.err = f.fr.stop(f.ctx) }

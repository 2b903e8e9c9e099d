package consume

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// publishers is the number of publishing clients: one, so that the
// message with key number N+1 is msgs[N] and a run's publish order is its
// seed's (workload.KeyOf).
const publishers = 1

// copyDelay is how long after a message its duplicate is due, for
// Config.DuplicateRate: a few publishes later on a local broker, as a
// publisher's retry would come.
const copyDelay = time.Millisecond

// publishTimeout bounds one publish; a publish that fails or times out is
// retried by the driver (and may have happened: the retry duplicates it).
const publishTimeout = 2 * time.Second

// traffic is the run's publishing as a workload driver run: Messages
// logical requests from one client, a delayed copy of DuplicateRate of
// them, and publish retries with jittered backoff; every attempt is one
// publish by the publisher target.
func (r *runner) traffic(pub *publisher) workload.Config {
	keys := workload.Keys{Prefix: r.runID}
	if rate := r.cfg.DuplicateRate; rate > 0 {
		keys.Delayed, keys.Delay, keys.DupFraction = 1, copyDelay, rate
	}
	return workload.Config{
		Seed: r.cfg.Seed, Requests: int64(r.cfg.Messages), Clients: publishers, Keys: keys,
		Retry: workload.Retry{MaxAttempts: workload.MaxAttempts, Backoff: 20 * time.Millisecond,
			MaxBackoff: 100 * time.Millisecond, Jitter: 0.8},
		DrainTimeout: min(r.cfg.Timeout, workload.MaxWait),
		Target:       pub, NoProbe: true, Now: r.now,
		// The publishes are not calls on the keys (the consumers' are):
		// they stay out of the run's history.
		Recorder: history.NewRecorder(),
	}
}

// publisher is the workload.Target of a consumer run: an attempt publishes
// a message to the broker. The faults aimed at the publishing (the
// private server's restart halfway, the worker restarts spread over it)
// strike before the first publish of the message they are due at, and a
// pause or overlap target's second copy goes out right after its first.
type publisher struct {
	r     *runner
	count atomic.Int64 // publishes the broker confirmed, copies included
}

// Attempt publishes the message of a.Key once.
func (p *publisher) Attempt(ctx context.Context, a *workload.Attempt) (history.Op, bool) {
	r := p.r
	m := r.plan.byKey(a.Key)
	op := history.Op{Call: r.now()}
	if m == nil { // cannot happen: the plan names the driver's keys
		op.Outcome, op.Err = history.Error, "no message with key "+a.Key
		op.Return = op.Call
		return op, true
	}
	if r.notePublish(m.Key) {
		r.beforeFirstPublish(ctx, m.N)
	}
	if err := p.publish(ctx, m); err != nil {
		r.c.publishRetries.Add(1)
		op.Outcome, op.Return, op.Err = history.Unknown, history.NoReturn, err.Error()
		return op, false
	}
	op.Outcome, op.Return = history.Executed, r.now()
	if r.plan.copy.take(m.Key) {
		// The fault's copy: retried here until it goes out, like a
		// publisher retry of a publish whose confirmation was lost.
		for p.publish(ctx, m) != nil && ctx.Err() == nil {
			r.c.publishRetries.Add(1)
			sleep(ctx, 20*time.Millisecond)
		}
	}
	return op, true
}

func (p *publisher) publish(ctx context.Context, m *message) error {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := p.r.b.publish(pctx, m.Key, m.body()); err != nil {
		return err
	}
	p.count.Add(1)
	return nil
}

// Probe is never called: the run's own probe asks the store (probe.go).
func (p *publisher) Probe(context.Context, []workload.ProbeKey) error { return nil }

// notePublish records the first publish time of key and reports whether
// this is its first.
func (r *runner) notePublish(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.published[key]; ok {
		return false
	}
	r.published[key] = r.now()
	return true
}

// beforeFirstPublish strikes the faults due at message n: the private
// server's restart at the middle message, and the worker restarts spread
// evenly over the messages.
func (r *runner) beforeFirstPublish(ctx context.Context, n int) {
	if r.cfg.Faults.ServerRestart && n == r.cfg.Messages/2 {
		go r.restartServer(ctx)
	}
	if r.cfg.Processes && r.restartDue(n) {
		r.restartWorker()
	}
}

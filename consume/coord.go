package consume

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// coord is what a consumer reports to and asks: the runner itself for
// in-process consumers, an RPC client in a worker process. Everything a
// run must still know after a consumer dies lives behind it: the history,
// the effect sink, the counts and the fault targets.
type coord interface {
	// record adds a call or fault op to the history.
	record(op history.Op)
	// delivered counts one processed delivery and how it was settled
	// (settled false: the settle call failed; abandoned: the consumer
	// crashed holding it).
	delivered(redelivered bool, a idem.Decision, settled bool)
	// batched counts one pulled batch of size deliveries.
	batched(size int)
	// apply applies e to the effect sink and records its effect op (op
	// with Call, Return, Applied and Outcome filled in by the sink side).
	apply(ctx context.Context, e workload.Effect, op history.Op) (applied bool, err error)
	// recoverKey answers the engine's recovery question on the sink.
	recoverKey(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error)
	// takeCrash reports whether key is a crash target not struck yet, and
	// marks it struck.
	takeCrash(key string) bool
	// pause stalls the consumer if key is a pause target not struck yet.
	pause(ctx context.Context, consumer int, key string, token idem.Token)
	// The overlap handshake (Faults.Overlap), for target keys only: hold
	// stalls the consumer of the first copy of key to reach it before
	// its effect, until another copy passed its claim, and reports
	// whether it held; passed says that another copy got its claim
	// answered, and with wait (a copy about to run its handler) also
	// waits for the held copy's effect, so the held copy, which claimed
	// first, writes first; heldDone says the held copy's effect is done.
	// Each wait lasts at most half the lease.
	hold(ctx context.Context, consumer int, key string, token idem.Token) bool
	passed(key string, wait bool)
	heldDone(key string)
}

var _ coord = (*runner)(nil)

func (r *runner) record(op history.Op) { r.rec.Record(op) }

func (r *runner) delivered(redelivered bool, a idem.Decision, settled bool) {
	r.c.deliveries.Add(1)
	if redelivered {
		r.c.redeliveries.Add(1)
	}
	switch {
	case a == abandoned:
	case !settled:
		r.c.settleErrors.Add(1)
	case a == idem.Ack:
		r.c.acked.Add(1)
		r.settled.Add(1)
	case a == idem.DeadLetter:
		r.c.deadLetterActions.Add(1)
		r.settled.Add(1)
	default:
		r.c.requeued.Add(1)
	}
}

func (r *runner) batched(size int) {
	r.c.batches.Add(1)
	r.c.batchedDeliveries.Add(int64(size))
}

func (r *runner) apply(ctx context.Context, e workload.Effect, op history.Op) (bool, error) {
	op.Call = r.now()
	applied, err := r.sink.Apply(ctx, e)
	op.Return = r.now()
	if err != nil {
		op.Outcome, op.Return, op.Err = history.Unknown, history.NoReturn, err.Error()
		r.rec.Record(op)
		return false, err
	}
	op.Applied = applied
	if !applied {
		op.Err = workload.ErrStale.Error()
	}
	r.rec.Record(op)
	if applied {
		r.noteEffect(e.Key, op.Return)
	}
	return applied, nil
}

func (r *runner) recoverKey(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	if r.recoverer == nil {
		return idem.Response{}, false, nil
	}
	return r.recoverer.Recover(ctx, key, token)
}

func (r *runner) takeCrash(key string) bool { return r.plan.crash.take(key) }

// pause, in-process, blocks the consumer's goroutine (see waitPause).
func (r *runner) pause(ctx context.Context, consumer int, key string, token idem.Token) {
	if !r.plan.pause.take(key) {
		return
	}
	r.pausing.Add(1)
	defer r.pausing.Add(-1)
	start := r.now()
	took := r.waitPause(key, nil)
	r.rec.Record(history.Fault(history.FaultPause, fmt.Sprintf("pause consumer %d before effect for %s", consumer, took.Round(time.Millisecond)),
		start, r.now()).OnClient(consumer).OnKey(key, uint64(token)))
}

// maxPause bounds a pause, in multiples of PauseFor.
const maxPause = 10

// waitPause waits out a pause aimed at key: at least PauseFor, and then
// until another consumer applied key's effect (the paused one resumes
// right behind its successor, the window a stale writer needs), at most
// maxPause × PauseFor; the run's end or dead (a stopped worker that
// exited) end it early. It returns how long the pause lasted.
func (r *runner) waitPause(key string, dead <-chan struct{}) time.Duration {
	start := time.Now()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return time.Since(start)
		case <-dead:
			return time.Since(start)
		case <-t.C:
		}
		d := time.Since(start)
		if d >= r.cfg.Faults.PauseFor && (len(r.sink.Ledger().Applied(key)) > 0 || d >= maxPause*r.cfg.Faults.PauseFor) {
			return d
		}
	}
}

// overlap is the handshake state of one overlap target.
type overlap struct {
	passed chan struct{} // closed once another copy got its claim answered
	done   chan struct{} // closed once the held copy's effect is done
}

// overlapOf returns key's handshake state.
func (r *runner) overlapOf(key string) *overlap {
	r.holdMu.Lock()
	defer r.holdMu.Unlock()
	if r.overlaps == nil {
		r.overlaps = map[string]*overlap{}
	}
	o, ok := r.overlaps[key]
	if !ok {
		o = &overlap{passed: make(chan struct{}), done: make(chan struct{})}
		r.overlaps[key] = o
	}
	return o
}

// closeOnce closes ch unless it is closed; holdMu serialises the closers.
func (r *runner) closeOnce(ch chan struct{}) {
	r.holdMu.Lock()
	defer r.holdMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// hold, in-process, blocks the consumer's goroutine until another copy of
// key got its claim answered (see waitOverlap).
func (r *runner) hold(_ context.Context, consumer int, key string, token idem.Token) bool {
	if !r.plan.hold.take(key) {
		return false
	}
	start := r.now()
	took, met := r.waitOverlap(r.overlapOf(key).passed)
	label := fmt.Sprintf("hold consumer %d before effect until another copy was claimed (%s)", consumer, took.Round(time.Millisecond))
	if !met {
		label = fmt.Sprintf("hold consumer %d before effect: no other copy was claimed within %s", consumer, took.Round(time.Millisecond))
	}
	r.rec.Record(history.Fault(history.FaultPause, label, start, r.now()).OnClient(consumer).OnKey(key, uint64(token)))
	return true
}

// waitOverlap waits until ch is closed, or at most half the lease (no
// heartbeat runs before the effect: the held copy must still own its
// lease when it goes on, or this would be a pause), or until the run ends.
// It returns how long it waited and whether ch was closed.
func (r *runner) waitOverlap(ch chan struct{}) (time.Duration, bool) {
	start := time.Now()
	t := time.NewTimer(r.cfg.LeaseTTL / 2)
	defer t.Stop()
	select {
	case <-ch:
		return time.Since(start), true
	case <-t.C:
	case <-r.stop:
	}
	return time.Since(start), false
}

func (r *runner) passed(key string, wait bool) {
	if !r.plan.hold.has(key) {
		return
	}
	o := r.overlapOf(key)
	r.closeOnce(o.passed)
	if wait {
		r.waitOverlap(o.done)
	}
}

func (r *runner) heldDone(key string) { r.closeOnce(r.overlapOf(key).done) }

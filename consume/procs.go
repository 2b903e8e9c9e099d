package consume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idembench/idembench/harness/multiproc"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// proc is one worker process of a multi-process run.
type proc struct {
	*multiproc.Proc
	id      int         // its consumer id
	restart atomic.Bool // it was sent SIGTERM for a restart
}

// procs is the set of live worker processes.
type procs struct {
	mu         sync.Mutex
	live       map[int]*proc
	unexpected int // exits that were neither a crash nor a restart
}

// startWorker starts a worker process for a new consumer and sends it its
// spec.
func (r *runner) startWorker(ctx context.Context) error {
	id := int(r.consumers.Add(1) - 1)
	mp, err := multiproc.StartProc(r.cfg.WorkerCommand())
	if err != nil {
		return fmt.Errorf("%w: start worker process: %v", ErrConfig, err)
	}
	p := &proc{Proc: mp, id: id}
	r.procs.mu.Lock()
	r.procs.live[id] = p
	r.procs.mu.Unlock()
	_ = p.Conn.SendHello(workerKind, r.workerSpec(id))
	r.wg.Go(func() {
		p.Conn.Serve(context.Background(), func(_ context.Context, method string, body any, _ bool) (any, error) {
			return r.dispatch(p, method, body)
		})
		p.Conn.Close()
	})
	r.wg.Go(func() {
		err := p.Wait()
		r.workerExited(ctx, p, err)
	})
	return nil
}

func (r *runner) workerSpec(id int) workerSpec {
	c := r.cfg
	return workerSpec{Broker: c.Broker, URL: r.b.url(), Run: r.runID, Consumer: id, BrokerOnly: c.BrokerOnly,
		Recovery: c.Recovery, LeaseTTL: c.LeaseTTL, Latency: c.Latency, RequeueDelay: c.RequeueDelay,
		AckWait: c.AckWait, Prefetch: c.Prefetch, Consumers: c.Consumers, Batch: c.Batch, BatchLinger: c.BatchLinger,
		Holds: r.plan.hold.list()}
}

// workerExited starts a replacement for a worker that died (a crash, a
// restart, or anything else) unless the run is ending. Unexpected exits
// are recorded as faults with the end of the worker's stderr, and are
// replaced at most 2 × Consumers times.
func (r *runner) workerExited(ctx context.Context, p *proc, err error) {
	r.procs.mu.Lock()
	delete(r.procs.live, p.id)
	r.procs.mu.Unlock()
	select {
	case <-r.stop:
		return
	default:
	}
	if !p.Killed() && !p.restart.Load() {
		r.procs.mu.Lock()
		r.procs.unexpected++
		n := r.procs.unexpected
		r.procs.mu.Unlock()
		now := r.now()
		r.rec.Record(history.Fault(history.FaultCrash, fmt.Sprintf("worker %d exited unexpectedly (%v): %s", p.id, err, p.Stderr()), now, now).OnClient(p.id))
		if n > 2*r.cfg.Consumers {
			return
		}
	}
	if ctx.Err() == nil {
		_ = r.startWorker(ctx)
	}
}

// restartWorker sends SIGTERM to the live worker with the lowest id: it
// closes its consumer and exits, and workerExited replaces it.
func (r *runner) restartWorker() {
	r.procs.mu.Lock()
	var p *proc
	for _, q := range r.procs.live {
		if p == nil || q.id < p.id {
			p = q
		}
	}
	r.procs.mu.Unlock()
	if p == nil {
		return
	}
	p.restart.Store(true)
	r.c.restarts.Add(1)
	now := r.now()
	r.rec.Record(history.Fault(history.FaultStop, fmt.Sprintf("restart worker %d (SIGTERM)", p.id), now, now).OnClient(p.id))
	_ = p.Signal(syscall.SIGTERM)
}

// stopWorkers ends every worker: SIGCONT (a paused one), SIGTERM, and
// SIGKILL for those still running 5 s later, or 500 ms later when the run
// was cut short (interrupted, or its broker died).
func (r *runner) stopWorkers(cut bool) {
	grace := 5 * time.Second
	if cut {
		grace = 500 * time.Millisecond
	}
	r.procs.mu.Lock()
	var ps []*multiproc.Proc
	for _, p := range r.procs.live {
		ps = append(ps, p.Proc)
	}
	r.procs.mu.Unlock()
	multiproc.Terminate(ps, grace)
}

// dispatch carries out one request of worker p.
func (r *runner) dispatch(p *proc, method string, body any) (any, error) {
	switch b := body.(type) {
	case history.Op: // multiproc.MethodRecord
		r.rec.Record(b)
		return nil, nil
	case multiproc.PauseRequest: // multiproc.MethodPause
		return r.pauseWorker(p, b), nil
	case nil: // multiproc.MethodCrash: its SIGKILL says it
		return nil, nil
	}
	req, ok := body.(request)
	if !ok {
		return nil, fmt.Errorf("consume: worker call %q with a %T", method, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp response
	if r.store == nil && isStoreMethod(method) {
		return nil, idem.BackendError(method, errors.New("broker-only run has no store"))
	}
	var err error
	l := req.Lease
	switch method {
	case mDelivered:
		r.delivered(req.Redelivered, req.Decision, req.Settled)
	case mApply:
		resp.Bool, err = r.apply(ctx, req.Effect, req.Op)
	case mRecover:
		resp.Resp, resp.Bool, err = r.recoverKey(ctx, req.Key, req.Token)
	case mTakeCrash:
		resp.Bool = r.takeCrash(req.Key)
	case mHold:
		resp.Bool = r.hold(ctx, req.Consumer, req.Key, req.Token)
	case mPassed:
		r.passed(req.Key, req.Wait)
	case mHeldDone:
		r.heldDone(req.Key)
	case mAcquire:
		resp.Lease, resp.Rec, err = r.store.Acquire(ctx, req.Key, req.FP, req.TTL)
	case mHeartbeat:
		err = r.store.Heartbeat(ctx, &l, req.TTL)
		resp.Lease = &l
	case mComplete:
		err = r.store.Complete(ctx, &l, req.Resp, req.TTL)
	case mFail:
		err = r.store.Fail(ctx, &l, req.Resp, req.TTL)
	case mRelease:
		err = r.store.Release(ctx, &l)
	case mGet:
		resp.Rec, err = r.store.Get(ctx, req.Key)
	case mBatched:
		r.batched(req.Size)
	case mAcquireBatch:
		resp.Acquired = acquireBatch(ctx, r.store, req.Acquires, req.TTL)
	case mFinishBatch:
		resp.Finished = finishBatch(ctx, r.store, req.Finishes, req.TTL)
	default:
		err = fmt.Errorf("consume: unknown worker request %q", method)
	}
	return resp, err
}

func isStoreMethod(m string) bool {
	switch m {
	case mAcquire, mHeartbeat, mComplete, mFail, mRelease, mGet, mAcquireBatch, mFinishBatch:
		return true
	}
	return false
}

// pauseWorker stops worker p (SIGSTOP) when the request's key is a pause
// target and reports whether it did; the answer waits in the pipe until
// SIGCONT (see waitPause).
func (r *runner) pauseWorker(p *proc, req multiproc.PauseRequest) bool {
	if !r.plan.pause.take(req.Key) {
		return false
	}
	r.pausing.Add(1)
	start := r.now()
	_ = p.Signal(syscall.SIGSTOP)
	go func() {
		defer r.pausing.Add(-1)
		took := r.waitPause(req.Key, p.Done())
		_ = p.Signal(syscall.SIGCONT)
		r.rec.Record(history.Fault(history.FaultPause, fmt.Sprintf("SIGSTOP worker %d before effect for %s", p.id, took.Round(time.Millisecond)),
			start, r.now()).OnClient(p.id).OnKey(req.Key, req.Token))
	}()
	return true
}

package consume

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// proc is one worker process of a multi-process run.
type proc struct {
	id      int // its consumer id
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process exited
	restart atomic.Bool   // it was sent SIGTERM for a restart
	stderr  *tailBuffer
}

// procs is the set of live worker processes.
type procs struct {
	mu         sync.Mutex
	live       map[int]*proc
	unexpected int // exits that were neither a crash nor a restart
}

// startWorker starts a worker process for a new consumer. The worker's
// stdin and stdout are pipes of our own (not exec's), so that its exit
// and our reading of its last requests do not race.
func (r *runner) startWorker(ctx context.Context) error {
	id := int(r.consumers.Add(1) - 1)
	cmd := r.cfg.WorkerCommand()
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	p := &proc{id: id, cmd: cmd, done: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = workerProcAttr()
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return fmt.Errorf("%w: start worker process: %v", ErrConfig, err)
	}
	r.procs.mu.Lock()
	r.procs.live[id] = p
	r.procs.mu.Unlock()
	enc := &lockedEncoder{enc: gob.NewEncoder(inW)}
	spec := r.workerSpec(id)
	_ = enc.encode(&spec)
	r.wg.Go(func() {
		r.serve(p, gob.NewDecoder(outR), enc)
		outR.Close()
		inW.Close()
	})
	r.wg.Go(func() {
		err := cmd.Wait()
		close(p.done)
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

type lockedEncoder struct {
	mu  sync.Mutex
	enc *gob.Encoder
}

func (e *lockedEncoder) encode(v any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.enc.Encode(v)
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
	var ee *exec.ExitError
	killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	if !killed && !p.restart.Load() {
		r.procs.mu.Lock()
		r.procs.unexpected++
		n := r.procs.unexpected
		r.procs.mu.Unlock()
		now := r.now()
		r.rec.Record(history.Op{Kind: history.KindFault, Client: p.id, Worker: p.id, Call: now, Return: now,
			Label: fmt.Sprintf("worker %d exited unexpectedly (%v): %s", p.id, err, p.stderr.String())})
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
	r.rec.Record(history.Op{Kind: history.KindFault, Client: p.id, Worker: p.id, Call: now, Return: now,
		Label: fmt.Sprintf("restart worker %d (SIGTERM)", p.id)})
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// stopWorkers ends every worker: SIGCONT (a paused one), SIGTERM, and
// SIGKILL for those still running 5 s later, or 500 ms later when the run
// was cut short (interrupted, or its broker died).
func (r *runner) stopWorkers(cut bool) {
	grace := 5 * time.Second
	if cut {
		grace = 500 * time.Millisecond
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	r.procs.mu.Lock()
	var ps []*proc
	for _, p := range r.procs.live {
		ps = append(ps, p)
	}
	r.procs.mu.Unlock()
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	late := false
	for _, p := range ps {
		if !late {
			select {
			case <-p.done:
				continue
			case <-deadline.C:
				late = true
			}
		}
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// serve answers a worker's requests until its stdout closes.
func (r *runner) serve(p *proc, dec *gob.Decoder, enc *lockedEncoder) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return
		}
		wg.Go(func() {
			resp := r.dispatch(p, &req)
			resp.ID = req.ID
			if err := enc.encode(&resp); err != nil {
				// The worker would wait for this answer until its
				// timeout: send the encoding error instead.
				_ = enc.encode(&response{ID: req.ID, Err: toWire(idem.BackendError("coordinator", err))})
			}
		})
	}
}

// dispatch carries out one request of worker p.
func (r *runner) dispatch(p *proc, req *request) response {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp response
	if r.store == nil && isStoreMethod(req.Method) {
		resp.Err = toWire(idem.BackendError(req.Method, errors.New("broker-only run has no store")))
		return resp
	}
	var err error
	l := req.Lease
	switch req.Method {
	case mRecord:
		r.rec.Record(req.Op)
	case mDelivered:
		r.delivered(req.Redelivered, action(req.Action), req.Settled)
	case mApply:
		resp.Bool, err = r.apply(ctx, req.Effect, req.Op)
	case mRecover:
		resp.Resp, resp.Bool, err = r.recoverKey(ctx, req.Key, req.Token)
	case mTakeCrash:
		resp.Bool = r.takeCrash(req.Key)
	case mPause:
		r.pauseWorker(p, req)
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
		err = fmt.Errorf("consume: unknown worker request %q", req.Method)
	}
	resp.Err = toWire(err)
	return resp
}

func isStoreMethod(m string) bool {
	switch m {
	case mAcquire, mHeartbeat, mComplete, mFail, mRelease, mGet, mAcquireBatch, mFinishBatch:
		return true
	}
	return false
}

// pauseWorker stops worker p (SIGSTOP) when the request's key is a pause
// target; the answer waits in the pipe until SIGCONT (see waitPause).
func (r *runner) pauseWorker(p *proc, req *request) {
	if !r.plan.pause.take(req.Key) {
		return
	}
	r.pausing.Add(1)
	start := r.now()
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	go func() {
		defer r.pausing.Add(-1)
		took := r.waitPause(req.Key, p.done)
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		r.rec.Record(history.Op{Kind: history.KindFault, Client: p.id, Worker: p.id, Key: req.Key, Token: uint64(req.Token),
			Call: start, Return: r.now(), Label: fmt.Sprintf("SIGSTOP worker %d before effect for %s", p.id, took.Round(time.Millisecond))})
	}()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

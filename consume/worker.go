package consume

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/idembench/idembench/harness/multiproc"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// workerSpec is what the coordinator tells a worker process: one consumer
// of the run.
type workerSpec struct {
	Broker, URL, Run string
	Consumer         int
	BrokerOnly       bool
	Recovery         bool
	LeaseTTL         time.Duration
	Latency          time.Duration
	RequeueDelay     time.Duration
	AckWait          time.Duration
	Prefetch         int
	Consumers        int
	Batch            int
	BatchLinger      time.Duration
	// Holds are the overlap targets (Faults.Overlap): the worker asks
	// the coordinator about these keys only.
	Holds []string
}

// WorkerKind names a consumer worker in the protocol's hello: the key of
// Worker in multiproc.ServeWorker's kinds.
const WorkerKind = "consume"

// workerKind is WorkerKind, as Run sends it.
const workerKind = WorkerKind

// Worker runs one consumer of a multi-process run (Config.Processes) in
// this process, a multiproc.WorkerFunc: multiproc.ServeWorker calls it
// with the connection to the coordinator (the worker's stdin and stdout,
// connected by Run) and the coordinator's hello. Its effects,
// history and idempotency store live in the coordinator, so the process
// can be killed (SIGKILL after the effect, before the ack) or stopped
// (SIGSTOP) at any point. It returns when ctx ends (the worker's main
// cancels it on SIGTERM: a consumer restart) or when the connection to the
// coordinator breaks. A worker that Run aims a crash at kills itself with
// SIGKILL and never returns.
func Worker(ctx context.Context, c *multiproc.Conn, h multiproc.Hello) error {
	var spec workerSpec
	if err := h.Decode(&spec); err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { c.Serve(ctx, nil); cancel() }()
	cfg := &Config{Broker: spec.Broker, URL: spec.URL, Prefetch: spec.Prefetch, Consumers: spec.Consumers,
		RequeueDelay: spec.RequeueDelay, AckWait: spec.AckWait, Batch: spec.Batch}
	b, err := openBroker(ctx, cfg, spec.Run, false)
	if err != nil {
		return err
	}
	defer b.close(context.WithoutCancel(ctx))
	co := &rpcCoord{c: c, holds: map[string]bool{}}
	for _, k := range spec.Holds {
		co.holds[k] = true
	}
	n := &node{co: co, b: b, latency: spec.Latency, now: history.Now, batch: spec.Batch, linger: spec.BatchLinger, killInHook: true, ended: func(ctx context.Context, id int, crashed bool) {
		if crashed {
			_ = c.Notify(multiproc.MethodCrash, nil)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}}
	if !spec.BrokerOnly {
		n.newEngine(&remoteStore{c: c}, spec.LeaseTTL, spec.Recovery)
		defer n.engine.Close()
	}
	n.consume(ctx, spec.Consumer, 0)
	return nil
}

// rpcCoord is the coordinator as a worker sees it.
type rpcCoord struct {
	c     *multiproc.Conn
	holds map[string]bool // the overlap targets; read-only
}

var _ coord = (*rpcCoord)(nil)

// finishCall bounds the calls a worker makes to report what it did.
const finishCall = 30 * time.Second

func (r *rpcCoord) send(method string, req any) (response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), finishCall)
	defer cancel()
	return call(ctx, r.c, method, req)
}

func (r *rpcCoord) record(op history.Op) { _, _ = r.send(multiproc.MethodRecord, op) }

func (r *rpcCoord) delivered(redelivered bool, a idem.Decision, settled bool) {
	_, _ = r.send(mDelivered, request{Redelivered: redelivered, Decision: a, Settled: settled})
}

func (r *rpcCoord) apply(ctx context.Context, e workload.Effect, op history.Op) (bool, error) {
	resp, err := call(ctx, r.c, mApply, request{Effect: e, Op: op})
	return resp.Bool, err
}

func (r *rpcCoord) recoverKey(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	resp, err := call(ctx, r.c, mRecover, request{Key: key, Token: token})
	return resp.Resp, resp.Bool, err
}

func (r *rpcCoord) takeCrash(key string) bool {
	resp, err := r.send(mTakeCrash, request{Key: key})
	return err == nil && resp.Bool
}

// pause asks the coordinator, which stops this whole process (SIGSTOP)
// before it answers when key is a pause target.
func (r *rpcCoord) pause(ctx context.Context, consumer int, key string, token idem.Token) {
	_, _ = r.send(multiproc.MethodPause, multiproc.PauseRequest{Consumer: consumer, Key: key, Token: uint64(token)})
}

// hold asks the coordinator, which answers once the hold is over (or at
// once when another copy took it).
func (r *rpcCoord) hold(ctx context.Context, consumer int, key string, token idem.Token) bool {
	if !r.holds[key] {
		return false
	}
	resp, err := r.send(mHold, request{Consumer: consumer, Key: key, Token: token})
	return err == nil && resp.Bool
}

func (r *rpcCoord) passed(key string, wait bool) {
	if r.holds[key] {
		_, _ = r.send(mPassed, request{Key: key, Wait: wait})
	}
}

func (r *rpcCoord) heldDone(key string) {
	if r.holds[key] {
		_, _ = r.send(mHeldDone, request{Key: key})
	}
}

// remoteStore is the coordinator's idem.Store as a worker sees it. A
// broken pipe is an ambiguous backend error: the engine fails closed.
type remoteStore struct{ c *multiproc.Conn }

var _ idem.Store = (*remoteStore)(nil)

func (s *remoteStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	resp, err := call(ctx, s.c, mAcquire, request{Key: key, FP: fp, TTL: ttl})
	return resp.Lease, resp.Rec, err
}

func (s *remoteStore) Heartbeat(ctx context.Context, l *idem.Lease, ttl time.Duration) error {
	resp, err := call(ctx, s.c, mHeartbeat, request{Lease: *l, TTL: ttl})
	if err == nil && resp.Lease != nil {
		l.Expiry = resp.Lease.Expiry
	}
	return err
}

func (s *remoteStore) Complete(ctx context.Context, l *idem.Lease, r idem.Response, retention time.Duration) error {
	_, err := call(ctx, s.c, mComplete, request{Lease: *l, Resp: r, TTL: retention})
	return err
}

func (s *remoteStore) Fail(ctx context.Context, l *idem.Lease, r idem.Response, retention time.Duration) error {
	_, err := call(ctx, s.c, mFail, request{Lease: *l, Resp: r, TTL: retention})
	return err
}

func (s *remoteStore) Release(ctx context.Context, l *idem.Lease) error {
	_, err := call(ctx, s.c, mRelease, request{Lease: *l})
	return err
}

func (s *remoteStore) Get(ctx context.Context, key string) (*idem.Record, error) {
	resp, err := call(ctx, s.c, mGet, request{Key: key})
	return resp.Rec, err
}

func (r *rpcCoord) batched(size int) { _, _ = r.send(mBatched, request{Size: size}) }

// The batch claim and finish of a worker are one request each, so a
// pulled batch costs the worker one round trip to the coordinator per
// ConsumeBatch round and one more for its outcomes, as it costs the
// coordinator one to a store that implements idem.BatchStore.
var _ idem.BatchStore = (*remoteStore)(nil)

func (s *remoteStore) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, ttl time.Duration) []idem.AcquireResult {
	resp, err := call(ctx, s.c, mAcquireBatch, request{Acquires: reqs, TTL: ttl})
	if err == nil && len(resp.Acquired) != len(reqs) {
		err = idem.MarkAmbiguous(idem.BackendError("acquire batch", fmt.Errorf("%d answers for %d keys", len(resp.Acquired), len(reqs))))
	}
	out := make([]idem.AcquireResult, len(reqs))
	for i := range out {
		if err != nil {
			out[i].Err = err
			continue
		}
		a := resp.Acquired[i]
		out[i] = idem.AcquireResult{Lease: a.Lease, Record: a.Rec, Err: a.Err.Err()}
	}
	return out
}

func (s *remoteStore) FinishBatch(ctx context.Context, fs []idem.Finish, retention time.Duration) []error {
	resp, err := call(ctx, s.c, mFinishBatch, request{Finishes: fs, TTL: retention})
	if err == nil && len(resp.Finished) != len(fs) {
		err = idem.MarkAmbiguous(idem.BackendError("finish batch", fmt.Errorf("%d answers for %d writes", len(resp.Finished), len(fs))))
	}
	out := make([]error, len(fs))
	for i := range out {
		if err != nil {
			out[i] = err
			continue
		}
		out[i] = resp.Finished[i].Err.Err()
	}
	return out
}

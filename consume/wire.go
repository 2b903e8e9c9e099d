package consume

import (
	"context"
	"encoding/gob"
	"errors"
	"time"

	"github.com/idembench/idembench/harness/multiproc"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// The coordinator and a worker process talk the worker protocol of
// package harness/multiproc: the coordinator sends a workerSpec in the
// hello, then the worker calls the coordinator with a request and gets a
// response, in any order (a pause or a slow store call does not hold up a
// heartbeat). Recording an op and asking for a pause are the protocol's
// own methods; the others are this package's.

// The methods of a request.
const (
	mDelivered = "delivered"
	mApply     = "apply"
	mRecover   = "recover"
	mTakeCrash = "take-crash"
	mHold      = "hold"
	mPassed    = "passed"
	mHeldDone  = "held-done"
	mAcquire   = "acquire"
	mHeartbeat = "heartbeat"
	mComplete  = "complete"
	mFail      = "fail"
	mRelease   = "release"
	mGet       = "get"
	// Batch runs (Config.Batch).
	mBatched      = "batched"
	mAcquireBatch = "acquire-batch"
	mFinishBatch  = "finish-batch"
)

// request is one call from a worker; the fields its method needs are set.
type request struct {
	Op          history.Op
	Effect      workload.Effect
	Key         string
	FP          idem.Fingerprint
	TTL         time.Duration
	Lease       idem.Lease
	Resp        idem.Response
	Token       idem.Token
	Consumer    int
	Decision    idem.Decision
	Redelivered bool
	Settled     bool
	Wait        bool
	Size        int
	Acquires    []idem.AcquireRequest
	Finishes    []idem.Finish
}

// response answers a request.
type response struct {
	Bool  bool
	Lease *idem.Lease
	Rec   *idem.Record
	Resp  idem.Response
	// Acquired and Finished answer a batch claim and a batch finish, one
	// entry per key.
	Acquired []wireAcquired
	Finished []wireFinished
}

// wireFinished is one write's error of a batch finish on the wire (a
// struct: gob cannot send a nil element of a slice of pointers).
type wireFinished struct{ Err *multiproc.WireError }

// wireAcquired is one idem.AcquireResult on the wire.
type wireAcquired struct {
	Lease *idem.Lease
	Rec   *idem.Record
	Err   *multiproc.WireError
}

func init() {
	gob.Register(request{})
	gob.Register(response{})
}

// errCoordinatorGone is what every call returns once the connection to
// the coordinator broke. It is a backend error and ambiguous: the call may
// have been applied.
var errCoordinatorGone = idem.MarkAmbiguous(idem.BackendError("coordinator", multiproc.ErrConnClosed))

// call sends a method's request to the other end of c and waits for its
// response (ctx bounds the wait, not the call: the coordinator may still
// carry it out).
func call(ctx context.Context, c *multiproc.Conn, method string, req any) (response, error) {
	body, err := c.Call(ctx, method, req)
	if errors.Is(err, multiproc.ErrConnClosed) {
		return response{}, errCoordinatorGone
	}
	resp, _ := body.(response)
	return resp, err
}

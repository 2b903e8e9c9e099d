package consume

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// The coordinator and a worker process talk over the worker's stdin and
// stdout with gob: the coordinator first sends a workerSpec, then the
// worker sends requests and the coordinator answers each with a response
// of the same ID, in any order (a pause or a slow store call does not hold
// up a heartbeat).

// The methods of a request.
const (
	mRecord    = "record"
	mDelivered = "delivered"
	mApply     = "apply"
	mRecover   = "recover"
	mTakeCrash = "take-crash"
	mPause     = "pause"
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
	ID          uint64
	Method      string
	Op          history.Op
	Effect      workload.Effect
	Key         string
	FP          idem.Fingerprint
	TTL         time.Duration
	Lease       idem.Lease
	Resp        idem.Response
	Token       idem.Token
	Consumer    int
	Action      uint8
	Redelivered bool
	Settled     bool
	Wait        bool
	Size        int
	Acquires    []idem.AcquireRequest
	Finishes    []idem.Finish
}

// response answers the request with the same ID.
type response struct {
	ID    uint64
	Bool  bool
	Lease *idem.Lease
	Rec   *idem.Record
	Resp  idem.Response
	Err   *wireError
	// Acquired and Finished answer a batch claim and a batch finish, one
	// entry per key.
	Acquired []wireAcquired
	Finished []wireFinished
}

// wireFinished is one write's error of a batch finish on the wire (a
// struct: gob cannot send a nil element of a slice of pointers).
type wireFinished struct{ Err *wireError }

// wireAcquired is one idem.AcquireResult on the wire.
type wireAcquired struct {
	Lease *idem.Lease
	Rec   *idem.Record
	Err   *wireError
}

// wireError carries an error across the pipe with the sentinel it wraps,
// so that errors.Is still holds on the worker's side.
type wireError struct {
	Kind      string
	Msg       string
	Ambiguous bool
}

var wireSentinels = []struct {
	kind string
	err  error
}{
	{"lease-lost", idem.ErrLeaseLost},
	{"not-found", idem.ErrNotFound},
	{"corrupt", idem.ErrCorruptRecord},
	{"invalid-key", idem.ErrInvalidKey},
	{"too-large", idem.ErrResponseTooLarge},
	{"backend", idem.ErrBackend},
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error(), Ambiguous: idem.Ambiguous(err)}
	for _, s := range wireSentinels {
		if errors.Is(err, s.err) {
			w.Kind = s.kind
			break
		}
	}
	return w
}

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	err := errors.New(w.Msg)
	for _, s := range wireSentinels {
		if s.kind == w.Kind {
			err = fmt.Errorf("%w (coordinator: %s)", s.err, w.Msg)
		}
	}
	if w.Ambiguous {
		err = idem.MarkAmbiguous(err)
	}
	return err
}

// errCoordinatorGone is what every call returns once the pipe to the
// coordinator broke. It is a backend error and ambiguous: the call may
// have been applied.
var errCoordinatorGone = idem.MarkAmbiguous(idem.BackendError("coordinator", errors.New("pipe to the coordinator closed")))

// client is the worker's end of the pipe.
type client struct {
	wmu     sync.Mutex
	enc     *gob.Encoder
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan response
	gone    bool
}

func newClient(w io.Writer) *client {
	return &client{enc: gob.NewEncoder(w), pending: map[uint64]chan response{}}
}

// read delivers responses until dec fails, then fails every pending and
// later call. It returns when the pipe is gone.
func (c *client) read(dec *gob.Decoder) {
	for {
		var resp response
		if err := dec.Decode(&resp); err != nil {
			break
		}
		c.mu.Lock()
		ch := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
	c.mu.Lock()
	c.gone = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// call sends req and waits for its response (ctx bounds the wait, not the
// call: the coordinator may still carry it out).
func (c *client) call(ctx context.Context, req request) (response, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		return response{}, errCoordinatorGone
	}
	c.next++
	req.ID = c.next
	c.pending[req.ID] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	err := c.enc.Encode(&req)
	c.wmu.Unlock()
	if err != nil {
		return response{}, errCoordinatorGone
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return response{}, errCoordinatorGone
		}
		return resp, resp.Err.err()
	case <-ctx.Done():
		return response{}, idem.MarkAmbiguous(ctx.Err())
	}
}

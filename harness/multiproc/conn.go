package multiproc

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

// The worker protocol.
//
// A coordinator and each of its worker processes talk over one
// io.ReadWriteCloser: today the worker's stdin and stdout (StartProc,
// Stdio), later possibly a TCP or NATS connection to another host, since
// nothing else is shared (no files, no inherited descriptors). Both ends
// write a stream of gob-encoded frames. The coordinator's first frame is
// the hello (SendHello, ReadHello): what kind of worker this is and its
// spec. After it either end may send
//
//   - a call: a method, a body and an ID; the other end answers with a
//     reply of the same ID, a body or an error, in any order, so that a
//     slow call does not hold up a quick one;
//   - an event: a method and a body, no reply.
//
// The methods every worker uses are the constants Method*; a package adds
// its own (package consume: its store and fault calls). Bodies travel as
// gob interface values: their types must be registered with gob.Register
// on both ends.

// The methods of the protocol that both kinds of worker use.
const (
	// MethodRecord, an event or a call from a worker: record these ops
	// in the run's history (a history.Op or a []history.Op).
	MethodRecord = "record"
	// MethodPause, a call from a worker: pause me now (a PauseRequest).
	// The coordinator stops the whole process (SIGSTOP) if the pause is
	// still to be done, resumes it (SIGCONT) and answers true, or answers
	// false at once.
	MethodPause = "pause"
	// MethodCrash, an event from a worker: I am about to crash (SIGKILL
	// myself); everything I recorded has been sent.
	MethodCrash = "crash"
	// MethodProgress, an event from a worker: how many calls it recorded
	// so far (an int).
	MethodProgress = "progress"
	// MethodDone, an event from a worker: its run is over and everything
	// it recorded has been sent; the body is its error text ("" if none).
	MethodDone = "done"
	// MethodLatency, an event from a worker right before its MethodDone
	// or MethodCrash: the latency of the calls it recorded, as an HDR
	// histogram (a reports.LatencyWire), which the coordinator merges
	// exactly into the run's.
	MethodLatency = "latency"
)

// PauseRequest is the body of a MethodPause call: the execution of Key
// under Token, of Consumer (a client or consumer id), asks to be stopped
// for pause ID.
type PauseRequest struct {
	ID       int
	Consumer int
	Key      string
	Token    uint64
}

func init() {
	gob.Register(Hello{})
	gob.Register(PauseRequest{})
	gob.Register(ClockSample{})
	gob.Register(ClockReport{})
	gob.Register(StartRequest{})
	gob.Register(history.Op{})
	gob.Register([]history.Op{})
	gob.Register(reports.LatencyWire{})
	gob.Register([]workload.Applied{})
}

// ErrConnClosed is what every call wraps once the connection to the other
// end broke or was closed. Such an error is ambiguous (idem.Ambiguous): the
// call may have been carried out.
var ErrConnClosed = errors.New("multiproc: connection to the other end closed")

// errClosed is ErrConnClosed marked ambiguous.
var errClosed = idem.MarkAmbiguous(ErrConnClosed)

// closedErr is errClosed, with why Serve stopped reading when it was not
// the end of the stream.
func (c *Conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr != nil {
		return idem.MarkAmbiguous(fmt.Errorf("%w (%v)", ErrConnClosed, c.readErr))
	}
	return errClosed
}

// frame is one message of the protocol.
type frame struct {
	// ID numbers a call and its reply; 0 for an event.
	ID uint64
	// Reply marks the answer to call ID.
	Reply bool
	// Method names a call or an event; empty in a reply.
	Method string
	Body   any
	Err    *WireError
}

// Hello is the body of the coordinator's first frame: the kind of worker
// it started (the key a worker process dispatches on, see ServeWorker) and
// that worker's spec, as JSON.
type Hello struct {
	Kind string
	Spec []byte
}

// Decode decodes the hello's spec into spec (a pointer).
func (h Hello) Decode(spec any) error {
	if err := json.Unmarshal(h.Spec, spec); err != nil {
		return fmt.Errorf("multiproc: worker spec: %w", err)
	}
	return nil
}

// Handler carries out a call or an event from the other end and returns
// the call's answer (ignored for an event). Calls are handled each in its
// own goroutine; events in the order they came, on the reading goroutine,
// so an event's handler must not block.
type Handler func(ctx context.Context, method string, body any, event bool) (any, error)

// Conn is one end of the worker protocol over a transport. Its methods are
// safe for concurrent use.
type Conn struct {
	t io.ReadWriteCloser

	wmu sync.Mutex
	enc *gob.Encoder
	dec *gob.Decoder

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan frame
	closed  bool
	readErr error          // why Serve stopped reading, when not the end of the stream
	calls   sync.WaitGroup // handlers of calls under way
}

// NewConn returns a Conn over t. Nothing is read until ReadHello or Serve.
func NewConn(t io.ReadWriteCloser) *Conn {
	return &Conn{t: t, enc: gob.NewEncoder(t), dec: gob.NewDecoder(t), pending: map[uint64]chan frame{}}
}

// Close closes the transport: pending and later calls fail with
// ErrConnClosed, and Serve returns.
func (c *Conn) Close() error { return c.t.Close() }

func (c *Conn) send(f *frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.enc.Encode(f); err != nil {
		return idem.MarkAmbiguous(fmt.Errorf("%w: %v", ErrConnClosed, err))
	}
	return nil
}

// SendHello sends the hello, the coordinator's first frame: the kind of
// worker and its spec, which must encode as JSON.
func (c *Conn) SendHello(kind string, spec any) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("multiproc: worker spec: %w", err)
	}
	return c.send(&frame{Method: "hello", Body: Hello{Kind: kind, Spec: b}})
}

// ReadHello reads the hello, the worker's first frame, before Serve: it
// decodes its spec into spec (a pointer). A hello of another kind than
// kind is an error (a worker started by the wrong command).
func (c *Conn) ReadHello(kind string, spec any) error {
	h, err := c.ReadAnyHello()
	if err != nil {
		return err
	}
	if h.Kind != kind {
		return fmt.Errorf("multiproc: this is a %s worker, started as a %s worker", kind, h.Kind)
	}
	return h.Decode(spec)
}

// ReadAnyHello reads the hello, the worker's first frame, before Serve,
// whatever its kind.
func (c *Conn) ReadAnyHello() (Hello, error) {
	var f frame
	if err := c.dec.Decode(&f); err != nil {
		return Hello{}, fmt.Errorf("multiproc: read the hello: %w", err)
	}
	h, ok := f.Body.(Hello)
	if !ok || f.Method != "hello" {
		return Hello{}, fmt.Errorf("multiproc: first frame is %q, want the hello", f.Method)
	}
	return h, nil
}

// Serve reads frames until the transport fails or closes: it delivers
// replies to their calls and hands calls and events to h (nil: every call
// is answered with an error and events are dropped). Then it fails every
// pending and later call with ErrConnClosed, waits for the handlers of
// calls under way (their answers are dropped) and returns. ctx is the
// handlers'.
func (c *Conn) Serve(ctx context.Context, h Handler) {
	for {
		var f frame
		if err := c.dec.Decode(&f); err != nil {
			if !errors.Is(err, io.EOF) {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
			}
			break
		}
		switch {
		case f.Reply:
			c.mu.Lock()
			ch := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		case f.ID == 0:
			if h != nil {
				_, _ = h(ctx, f.Method, f.Body, true)
			}
		default:
			c.calls.Go(func() {
				r := frame{ID: f.ID, Reply: true}
				var err error
				if h == nil {
					err = fmt.Errorf("multiproc: no handler for call %q", f.Method)
				} else {
					r.Body, err = h(ctx, f.Method, f.Body, false)
				}
				r.Err = ToWire(err)
				if c.send(&r) != nil && r.Body != nil {
					// The body may be what failed to encode: the
					// caller must not wait for its timeout.
					_ = c.send(&frame{ID: f.ID, Reply: true, Err: ToWire(fmt.Errorf("multiproc: answer of %q not sent", f.Method))})
				}
			})
		}
	}
	c.mu.Lock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	c.calls.Wait()
}

// Call sends a call and waits for its reply: it returns the reply's body
// or its error (one the other end sent, with the sentinel it wraps, see
// ToWire). ctx bounds the wait, not the call: the other end may still
// carry it out, and ctx's error is then ambiguous (WireError.Ambiguous).
// Serve must be running to receive the reply.
func (c *Conn) Call(ctx context.Context, method string, body any) (any, error) {
	ch := make(chan frame, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, c.closedErr()
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(&frame{ID: id, Method: method, Body: body}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, err
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return nil, c.closedErr()
		}
		return f.Body, f.Err.Err()
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, idem.MarkAmbiguous(ctx.Err())
	}
}

// Notify sends an event. When it returns nil the event is in the
// transport: a process that kills itself right after does not lose it.
func (c *Conn) Notify(method string, body any) error {
	return c.send(&frame{Method: method, Body: body})
}

// pipes is a transport of two pipe ends.
type pipes struct {
	r *os.File
	w *os.File
}

func (p pipes) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipes) Close() error                { return errors.Join(p.w.Close(), p.r.Close()) }

// Stdio is the worker's end of the protocol: its stdin and stdout. It
// points os.Stdout at stderr, so that nothing printed by mistake breaks
// the stream.
func Stdio() io.ReadWriteCloser {
	out := os.Stdout
	os.Stdout = os.Stderr
	return pipes{os.Stdin, out}
}

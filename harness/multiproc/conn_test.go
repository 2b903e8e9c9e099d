package multiproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// connPair returns two ends of the protocol over an in-memory transport,
// closed at the test's end.
func connPair(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	a, b := net.Pipe()
	co, wo := NewConn(a), NewConn(b)
	t.Cleanup(func() {
		co.Close()
		wo.Close()
	})
	return co, wo
}

// TestConnHello: the worker reads the spec the coordinator sent; a hello
// of another kind is refused.
func TestConnHello(t *testing.T) {
	type spec struct {
		Name string
		N    int
	}
	co, wo := connPair(t)
	go func() { _ = co.SendHello("run", spec{"x", 3}) }()
	var got spec
	if err := wo.ReadHello("run", &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(spec{"x", 3}, got); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}

	co, wo = connPair(t)
	go func() { _ = co.SendHello("consume", spec{}) }()
	if err := wo.ReadHello("run", &got); err == nil {
		t.Error("a consume hello was accepted by a run worker")
	}
}

// TestServeWorkerDispatches: one worker entry point serves every kind of
// worker: the hello's kind picks the WorkerFunc, which gets the spec; an
// unknown kind is a configuration error naming the kinds served.
func TestServeWorkerDispatches(t *testing.T) {
	kinds := map[string]WorkerFunc{
		RunKind: func(context.Context, *Conn, Hello) error { return errors.New("the run worker ran") },
		"consume": func(_ context.Context, _ *Conn, h Hello) error {
			var n int
			if err := h.Decode(&n); err != nil {
				return err
			}
			return fmt.Errorf("the consume worker ran with %d", n)
		},
	}
	for kind, want := range map[string]string{"consume": "the consume worker ran with 7", RunKind: "the run worker ran",
		"bogus": `no worker of kind "bogus" here (this binary serves consume, run)`} {
		a, b := net.Pipe()
		go func() { _ = NewConn(a).SendHello(kind, 7) }()
		err := ServeWorker(context.Background(), b, kinds)
		a.Close()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("hello of kind %s: error %v, want %q", kind, err, want)
		}
		if kind == "bogus" && !errors.Is(err, harness.ErrConfig) {
			t.Errorf("unknown kind: %v does not wrap harness.ErrConfig", err)
		}
	}
}

// TestConnCalls: calls go both ways and are answered by ID in any order
// (a slow call does not hold up a quick one); events are handled in the
// order they were sent; an error keeps its sentinel and its ambiguity; a
// call on a closed connection fails with ErrConnClosed, ambiguous.
func TestConnCalls(t *testing.T) {
	a, b := net.Pipe()
	co, wo := NewConn(a), NewConn(b)
	release, never := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var events []string
	var served sync.WaitGroup
	served.Go(func() {
		co.Serve(context.Background(), func(_ context.Context, method string, body any, event bool) (any, error) {
			switch {
			case event:
				mu.Lock()
				events = append(events, fmt.Sprint(method, body))
				mu.Unlock()
				return nil, nil
			case method == "slow":
				<-release
				return "slow done", nil
			case method == "unanswered":
				<-never
				return nil, nil
			case method == "lost":
				return nil, idem.MarkAmbiguous(fmt.Errorf("store: %w", idem.ErrLeaseLost))
			case method == "ask-back":
				// A call from the coordinator to the worker, while the
				// worker's call is open.
				return wo2co(co)
			}
			return body, nil
		})
	})
	served.Go(func() {
		wo.Serve(context.Background(), func(_ context.Context, method string, body any, _ bool) (any, error) {
			return "worker says " + method, nil
		})
	})

	slow := make(chan any, 1)
	go func() {
		r, _ := wo.Call(context.Background(), "slow", nil)
		slow <- r
	}()
	for i := range 3 {
		r, err := wo.Call(context.Background(), "echo", i)
		if err != nil || r != i {
			t.Fatalf("echo %d: %v, %v", i, r, err)
		}
	}
	select {
	case <-slow:
		t.Fatal("the slow call was answered before it was released")
	default:
	}
	close(release)
	if r := <-slow; r != "slow done" {
		t.Errorf("slow call: %v", r)
	}

	_, err := wo.Call(context.Background(), "lost", nil)
	if !errors.Is(err, idem.ErrLeaseLost) || !idem.Ambiguous(err) {
		t.Errorf("error %v: want ErrLeaseLost, ambiguous", err)
	}
	if r, err := wo.Call(context.Background(), "ask-back", nil); err != nil || r != "worker says back" {
		t.Errorf("call back: %v, %v", r, err)
	}

	ops := []history.Op{{Kind: history.KindCall, Key: "k", Client: 1}, {Kind: history.KindEffect, Key: "k"}}
	for _, n := range []int{1, 2, 3} {
		if err := wo.Notify(MethodProgress, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := wo.Notify(MethodRecord, ops); err != nil {
		t.Fatal(err)
	}
	if err := wo.Notify(MethodDone, ""); err != nil {
		t.Fatal(err)
	}
	// A call after the events: when it is answered, they were handled.
	if _, err := wo.Call(context.Background(), "echo", 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := []string{"progress1", "progress2", "progress3", fmt.Sprint("record", ops), "done"}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	close2 := make(chan struct{})
	go func() {
		defer close(close2)
		_, err := wo.Call(ctx, "unanswered", nil)
		if !idem.Ambiguous(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timed out call: %v, want the deadline, ambiguous", err)
		}
	}()
	<-close2

	close(never)
	co.Close()
	served.Wait()
	_, err = wo.Call(context.Background(), "echo", 1)
	if !errors.Is(err, ErrConnClosed) || !idem.Ambiguous(err) {
		t.Errorf("call on a closed connection: %v, want ErrConnClosed, ambiguous", err)
	}
	wo.Close()
}

// wo2co calls the worker from the coordinator's end.
func wo2co(co *Conn) (any, error) { return co.Call(context.Background(), "back", nil) }

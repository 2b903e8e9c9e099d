package blackbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Downstream is the mock downstream of OracleDownstream: a fake provider
// (a payment processor, a mailer) that the service calls for its side
// effect. It runs on loopback, accepts any method and path, and answers
// 200 with {"id": "ch_N", "status": "succeeded"}. Every call it receives is
// an effect of the key in its key header, recorded with the times it
// arrived and was answered, so it is the effect ledger of the run. Its
// methods are safe for concurrent use.
type Downstream struct {
	keyHeader string
	latency   time.Duration
	now       func() int64
	srv       *http.Server
	ln        net.Listener
	served    chan struct{}

	mu       sync.Mutex
	calls    []DownstreamCall
	failNext map[string]int
	hold     map[string]time.Duration
	next     int
}

// DownstreamCall is one call the mock downstream received.
type DownstreamCall struct {
	Key string
	// ID is the charge id it answered, "" when it answered an error.
	ID string
	// Status is the status it answered.
	Status int
	// Arrived and Answered are on the run's timeline (history.Now).
	Arrived, Answered int64
}

// NewDownstream starts a mock downstream on 127.0.0.1 on a free port. Calls
// carry their key in keyHeader; every answer is delayed by latency. now
// reads the run's timeline. Close stops it.
func NewDownstream(keyHeader string, latency time.Duration, now func() int64) (*Downstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, envf("mock downstream: %v", err)
	}
	d := &Downstream{
		keyHeader: keyHeader, latency: latency, now: now, ln: ln, served: make(chan struct{}),
		failNext: map[string]int{}, hold: map[string]time.Duration{},
	}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(d.served)
		_ = d.srv.Serve(ln)
	}()
	return d, nil
}

// URL returns the downstream's root URL, "http://127.0.0.1:PORT".
func (d *Downstream) URL() string { return "http://" + d.ln.Addr().String() }

// Close stops the downstream and waits for its server to return. It is
// idempotent.
func (d *Downstream) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := d.srv.Shutdown(ctx); err != nil {
		_ = d.srv.Close()
	}
	<-d.served
	return nil
}

// FailNext makes the next call for key answer status (a 5xx, as a provider
// that is down) without applying anything.
func (d *Downstream) FailNext(key string, status int) {
	d.mu.Lock()
	d.failNext[key] = status
	d.mu.Unlock()
}

// Hold delays every answer for key by dur on top of the latency, so a
// second request for the key arrives while the first is still running.
func (d *Downstream) Hold(key string, dur time.Duration) {
	d.mu.Lock()
	d.hold[key] = dur
	d.mu.Unlock()
}

// Calls returns a copy of every call so far, in arrival order of their
// answers.
func (d *Downstream) Calls() []DownstreamCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DownstreamCall(nil), d.calls...)
}

// Applied returns how many calls for key were applied (answered 200).
func (d *Downstream) Applied(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		if c.Key == key && c.ID != "" {
			n++
		}
	}
	return n
}

// ServeHTTP records the call and answers it.
func (d *Downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := d.now()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	key := r.Header.Get(d.keyHeader)
	d.mu.Lock()
	status, fail := d.failNext[key]
	delete(d.failNext, key)
	wait := d.latency + d.hold[key]
	d.mu.Unlock()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
		}
	}
	c := DownstreamCall{Key: key, Arrived: arrived, Status: http.StatusOK}
	d.mu.Lock()
	if fail {
		c.Status = status
	} else {
		d.next++
		c.ID = "ch_" + strconv.Itoa(d.next)
	}
	c.Answered = d.now()
	d.calls = append(d.calls, c)
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(c.Status)
	if fail {
		fmt.Fprintf(w, `{"error":"provider unavailable"}`)
		return
	}
	fmt.Fprintf(w, `{"id":%q,"status":"succeeded"}`, c.ID)
}

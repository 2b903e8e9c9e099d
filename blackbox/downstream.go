package blackbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FencingTokenHeader is the header with which a service fences its calls
// to the mock downstream: the fencing token of the lease it holds
// (idem.Lease.Token), in decimal.
const FencingTokenHeader = "Fencing-Token"

// Downstream is the mock downstream of OracleDownstream: a fake provider
// (a payment processor, a mailer) that the service calls for its side
// effect. It runs on loopback, accepts any method but GET and any path,
// and answers 200 with {"id": "ch_N", "status": "succeeded"}. Every such
// call is an effect of the key in its key header, recorded with the times
// it arrived and was answered, so it is the effect ledger of the run. Its
// methods are safe for concurrent use.
//
// A service that recovers from a crash between its effect and its record
// (idem.WithRecovery) uses two more features, both of a real provider
// that takes fencing tokens:
//   - Fencing: a call with a FencingTokenHeader below the highest token
//     seen for its path and key (by a call or a lookup) is refused with
//     409 {"error": "stale fencing token"} and applies nothing; it is
//     recorded as a call that failed. Calls without the header are never
//     refused.
//   - Lookup: GET on a path with the key header answers 200
//     {"charges": [...]}, the calls applied on that path with that key,
//     each the members of its JSON object body plus "id" and "status".
//     With a FencingTokenHeader, the lookup first raises the fence of
//     that path and key to the token, in the same step, so that no older
//     holder's call can land after the lookup found nothing. A lookup is
//     never an effect and is not in Calls.
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
	fence    map[chargeRef]uint64           // highest token seen
	applied  map[chargeRef][]map[string]any // what a lookup answers
}

// chargeRef names what a fence and a lookup are about: a key's calls on
// one path.
type chargeRef struct{ path, key string }

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
		fence: map[chargeRef]uint64{}, applied: map[chargeRef][]map[string]any{},
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

// ServeHTTP answers a lookup (GET), or records the call and answers it.
func (d *Downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		d.lookup(w, r)
		return
	}
	arrived := d.now()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	key := r.Header.Get(d.keyHeader)
	token, fenced, terr := fencingToken(r)
	ref := chargeRef{r.URL.Path, key}
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
	answer := `{"error":"provider unavailable"}`
	d.mu.Lock()
	switch {
	case terr != nil:
		c.Status, answer = http.StatusBadRequest, fmt.Sprintf(`{"error":%q}`, terr.Error())
	case fail:
		c.Status = status
	case fenced && token < d.fence[ref]:
		c.Status, answer = http.StatusConflict, `{"error":"stale fencing token"}`
	default:
		if fenced {
			d.fence[ref] = token
		}
		d.next++
		c.ID = "ch_" + strconv.Itoa(d.next)
		d.applied[ref] = append(d.applied[ref], chargeObject(body, c.ID))
		answer = fmt.Sprintf(`{"id":%q,"status":"succeeded"}`, c.ID)
	}
	c.Answered = d.now()
	d.calls = append(d.calls, c)
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(c.Status)
	fmt.Fprint(w, answer)
}

// lookup answers the calls applied on the request's path with its key,
// after raising their fence to the request's token when it has one.
func (d *Downstream) lookup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	key := r.Header.Get(d.keyHeader)
	token, fenced, err := fencingToken(r)
	switch {
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q}`, err.Error())
		return
	case key == "":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"a lookup needs the %s header"}`, d.keyHeader)
		return
	}
	if d.latency > 0 {
		select {
		case <-time.After(d.latency):
		case <-r.Context().Done():
			return
		}
	}
	ref := chargeRef{r.URL.Path, key}
	d.mu.Lock()
	if fenced && token > d.fence[ref] {
		d.fence[ref] = token
	}
	charges := append([]map[string]any{}, d.applied[ref]...)
	d.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"charges": charges})
	_, _ = w.Write(b)
}

// fencingToken reads the request's FencingTokenHeader; ok is false
// without one.
func fencingToken(r *http.Request) (token uint64, ok bool, err error) {
	v := r.Header.Get(FencingTokenHeader)
	if v == "" {
		return 0, false, nil
	}
	token, err = strconv.ParseUint(v, 10, 63)
	if err != nil {
		return 0, false, fmt.Errorf("%s %q is not a token (a decimal integer)", FencingTokenHeader, v)
	}
	return token, true, nil
}

// chargeObject is what a lookup answers for an applied call: the members
// of its body when that is a JSON object, plus its id and status.
func chargeObject(body []byte, id string) map[string]any {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		obj = map[string]any{}
	}
	obj["id"], obj["status"] = id, "succeeded"
	return obj
}

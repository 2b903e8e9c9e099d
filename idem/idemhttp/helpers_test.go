package idemhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// counter is a handler that counts its runs and answers 201 with a JSON
// document naming the run and echoing the body.
type counter struct {
	runs atomic.Int64
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/things/"+itoa(n))
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"run": n, "body": string(body)})
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// request builds a request with an optional key and a body; an empty
// contentType means application/json.
func request(method, target, key, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if key != "" {
		r.Header.Set(idemhttp.DefaultHeader, key)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// serve runs r through h and returns the recorded response.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// problem decodes the problem document of a recorded response.
func problem(t *testing.T, w *httptest.ResponseRecorder) idemhttp.Problem {
	t.Helper()
	return decodeProblem(t, w.Code, w.Header(), w.Body.Bytes())
}

// decodeProblem decodes a problem document and checks its media type and
// status.
func decodeProblem(t *testing.T, status int, h http.Header, body []byte) idemhttp.Problem {
	t.Helper()
	if ct := h.Get("Content-Type"); ct != idemhttp.ProblemContentType {
		t.Fatalf("Content-Type = %q, want %q (body %q)", ct, idemhttp.ProblemContentType, body)
	}
	var p idemhttp.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	if p.Status != status {
		t.Fatalf("problem status %d, response status %d", p.Status, status)
	}
	return p
}

// gate is a handler that blocks until released, to hold a key in flight.
type gate struct {
	entered chan struct{} // one value per run that started
	release chan struct{}
	status  int
	runs    atomic.Int64
}

func newGate(status int) *gate {
	return &gate{entered: make(chan struct{}, 128), release: make(chan struct{}), status: status}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := g.runs.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
	w.WriteHeader(g.status)
	_, _ = io.WriteString(w, "run "+itoa(n))
}

// faultyStore fails chosen operations with a backend error.
type faultyStore struct {
	idem.Store
	mu   sync.Mutex
	fail map[string]bool // "acquire", "complete", "fail", "release"
}

var errDown = errors.New("store is down")

func (s *faultyStore) broken(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail[op] {
		return idem.BackendError(op, errDown)
	}
	return nil
}

func (s *faultyStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := s.broken("acquire"); err != nil {
		return nil, nil, err
	}
	return s.Store.Acquire(ctx, key, fp, ttl)
}

func (s *faultyStore) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	if err := s.broken("complete"); err != nil {
		return err
	}
	return s.Store.Complete(ctx, l, resp, retention)
}

// errorLog collects the errors given to Options.OnError.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) record(_ *http.Request, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

package testenv

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// IdemToy is a tiny Idempotency-Key service for the tests of package
// blackbox and of the http command. A POST executes once per key (the body
// {"id":"KEY-N"}, 201) and replays that answer after, with
// Idempotency-Replayed: true unless NoMarker; a reused key with another
// body gets MismatchStatus (422 when zero), a POST without a key 400, any
// other method an empty 200. With Double it executes every POST (a double
// execution per duplicate). Set the fields before it serves.
type IdemToy struct {
	MismatchStatus   int
	NoMarker, Double bool
	Calls            atomic.Int64 // requests received

	mu         sync.Mutex
	bodies     map[string]string
	answers    map[string][]byte
	executions int
}

// ServeIdemToy serves toy on a test server closed at the end of t.
func ServeIdemToy(t testing.TB, toy *IdemToy) *httptest.Server {
	srv := httptest.NewServer(toy)
	t.Cleanup(srv.Close)
	return srv
}

// Executions returns how many POSTs the toy executed.
func (s *IdemToy) Executions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.executions
}

func (s *IdemToy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Calls.Add(1)
	if r.Method != http.MethodPost {
		return
	}
	key, ok := RequestKey(w, r)
	if !ok {
		return
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.answers[key]; ok && !s.Double {
		if s.bodies[key] != body.String() {
			w.WriteHeader(cmp(s.MismatchStatus, http.StatusUnprocessableEntity))
			return
		}
		Answer(w, b, !s.NoMarker)
		return
	}
	if s.answers == nil {
		s.answers, s.bodies = map[string][]byte{}, map[string]string{}
	}
	s.executions++
	b := fmt.Appendf(nil, `{"id":"%s-%d"}`, key, s.executions)
	s.answers[key], s.bodies[key] = b, body.String()
	Answer(w, b, false)
}

// RequestKey returns r's Idempotency-Key; a request without one is
// answered 400 and RequestKey returns false.
func RequestKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		w.WriteHeader(http.StatusBadRequest)
	}
	return key, key != ""
}

// Answer answers 201 with body b, marked Idempotency-Replayed: true when
// replayed.
func Answer(w http.ResponseWriter, b []byte, replayed bool) {
	if replayed {
		w.Header().Set("Idempotency-Replayed", "true")
	}
	w.WriteHeader(http.StatusCreated)
	w.Write(b)
}

// Send sends req with http.DefaultClient and returns the response, its
// body read and closed; an error fails t.
func Send(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// cmp returns v, or def when v is zero.
func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

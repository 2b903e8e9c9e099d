package idemhttp_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

func TestStoreFailures(t *testing.T) {
	tests := []struct {
		name    string
		fail    string // store operation that fails
		status  int
		reason  string
		runs    int64
		onError bool
		then    int // status of a retry once the store works again
	}{
		// Fail closed: the handler does not run without a claimed key.
		{"acquire fails", "acquire", 503, idemhttp.ReasonUnavailable, 0, true, 201},
		// The handler ran, so its response goes out; the key keeps its
		// lease until it expires, so a retry meanwhile is in flight.
		{"complete fails", "complete", 201, "", 1, true, 409},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &faultyStore{Store: newStore(t), fail: map[string]bool{tt.fail: true}}
			var log errorLog
			h := &counter{}
			mw := idemhttp.Middleware(idem.New(store), idemhttp.Options{OnError: log.record})(h)

			w := serve(mw, request("POST", "/p", "k", "{}"))
			if w.Code != tt.status || h.runs.Load() != tt.runs {
				t.Fatalf("got %d after %d runs, want %d after %d (body %q)", w.Code, h.runs.Load(), tt.status, tt.runs, w.Body)
			}
			if tt.reason != "" {
				if p := problem(t, w); p.Reason != tt.reason {
					t.Fatalf("reason %q", p.Reason)
				}
				if w.Header().Get("Retry-After") == "" {
					t.Fatal("503 without Retry-After")
				}
			}
			errs := log.all()
			if got := len(errs) == 1 && errors.Is(errs[0], idem.ErrBackend); got != tt.onError {
				t.Fatalf("OnError got %v", errs)
			}
			store.mu.Lock()
			store.fail = nil
			store.mu.Unlock()
			if w := serve(mw, request("POST", "/p", "k", "{}")); w.Code != tt.then {
				t.Fatalf("retry: %d, want %d", w.Code, tt.then)
			}
		})
	}
}

func TestClientGoneIsNotReported(t *testing.T) {
	var log errorLog
	mw := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{OnError: log.record})(&counter{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := serve(mw, request("POST", "/p", "k", "{}").WithContext(ctx))
	if w.Code != http.StatusServiceUnavailable || len(log.all()) != 0 {
		t.Fatalf("got %d, OnError %v", w.Code, log.all())
	}
}

func TestFaultHookAbort(t *testing.T) {
	tests := []struct {
		point idem.Point
		runs  int64
	}{
		{idem.PointBeforeFn, 0},
		{idem.PointAfterFn, 1},
		{idem.PointAfterComplete, 1},
	}
	for _, tt := range tests {
		t.Run(tt.point.String(), func(t *testing.T) {
			hook := func(_ context.Context, p idem.Point, _ idem.Lease) error {
				if p == tt.point {
					return errors.New("crash")
				}
				return nil
			}
			h := &counter{}
			mw := idemhttp.Middleware(idem.New(newStore(t), idem.WithHook(hook)), idemhttp.Options{})(h)
			w := serve(mw, request("POST", "/p", "k", "{}"))
			if w.Code != http.StatusServiceUnavailable || h.runs.Load() != tt.runs {
				t.Fatalf("got %d after %d runs", w.Code, h.runs.Load())
			}
			if p := problem(t, w); p.Reason != idemhttp.ReasonAborted {
				t.Fatalf("reason %q", p.Reason)
			}
		})
	}
}

// A recovery hook that completes a taken-over key answers like a replay.
func TestRecoveredAnswerIsReplay(t *testing.T) {
	crash := true
	hook := func(_ context.Context, p idem.Point, _ idem.Lease) error {
		if p == idem.PointAfterFn && crash {
			crash = false
			return errors.New("crash after the side effect")
		}
		return nil
	}
	recovery := func(context.Context, idem.Lease) (idem.Response, bool, error) {
		return idem.Response{Status: 201, Body: []byte("recovered")}, true, nil
	}
	h := &counter{}
	eng := idem.New(newStore(t), idem.WithHook(hook), idem.WithRecovery(recovery), idem.WithLeaseTTL(20*time.Millisecond))
	mw := idemhttp.Middleware(eng, idemhttp.Options{})(h)
	serve(mw, request("POST", "/p", "k", "{}"))
	time.Sleep(40 * time.Millisecond)
	w := serve(mw, request("POST", "/p", "k", "{}"))
	if w.Code != 201 || w.Body.String() != "recovered" || w.Header().Get(idemhttp.ReplayedHeader) != "true" || h.runs.Load() != 1 {
		t.Fatalf("got %d %q %v after %d runs", w.Code, w.Body, w.Header(), h.runs.Load())
	}
}

// A stored response that cannot be written (here: stored by a non-HTTP user
// of the same key with status 0) gets a 500, never a panic.
func TestUnreplayableStoredResponse(t *testing.T) {
	eng := idem.New(newStore(t))
	r := request("POST", "/p", "k", "{}")
	fp, err := idemhttp.NewFingerprinter(idemhttp.FingerprintOptions{})(r, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Do(context.Background(), "k", fp, func(context.Context) (idem.Response, error) {
		return idem.Response{Status: 0, Body: []byte("done")}, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := &counter{}
	w := serve(idemhttp.Middleware(eng, idemhttp.Options{})(h), r)
	if w.Code != 500 || h.runs.Load() != 0 {
		t.Fatalf("got %d after %d runs", w.Code, h.runs.Load())
	}
	if p := problem(t, w); p.Reason != idemhttp.ReasonUnreplayableResponse {
		t.Fatalf("reason %q", p.Reason)
	}
}

func TestMiddlewarePanicsOnNil(t *testing.T) {
	for name, f := range map[string]func(){
		"nil engine":  func() { idemhttp.Middleware(nil, idemhttp.Options{}) },
		"nil handler": func() { idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{})(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

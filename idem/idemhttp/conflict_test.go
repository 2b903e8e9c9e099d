package idemhttp_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

func TestInFlightConflict(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter time.Duration
		want       string
	}{
		{"default Retry-After", 0, "1"},
		{"rounded up", 1500 * time.Millisecond, "2"},
		{"below a second", time.Millisecond, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(http.StatusCreated)
			mw := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{RetryAfter: tt.retryAfter})(g)

			done := make(chan *httptest.ResponseRecorder)
			go func() { done <- serve(mw, request("POST", "/p", "k", "{}")) }()
			<-g.entered

			w := serve(mw, request("POST", "/p", "k", "{}"))
			if w.Code != http.StatusConflict || w.Header().Get("Retry-After") != tt.want {
				t.Fatalf("duplicate in flight: %d, Retry-After %q; want 409, %q", w.Code, w.Header().Get("Retry-After"), tt.want)
			}
			if p := problem(t, w); p.Reason != idemhttp.ReasonInProgress {
				t.Fatalf("reason %q", p.Reason)
			}
			// A different request with the same key is a mismatch even in flight.
			if w := serve(mw, request("POST", "/p", "k", `{"other":1}`)); w.Code != http.StatusUnprocessableEntity {
				t.Fatalf("different request in flight: %d, want 422", w.Code)
			}

			close(g.release)
			first := <-done
			if first.Code != http.StatusCreated || first.Body.String() != "run 1" {
				t.Fatalf("first: %d %q", first.Code, first.Body)
			}
			w = serve(mw, request("POST", "/p", "k", "{}"))
			if w.Code != http.StatusCreated || w.Body.String() != "run 1" || w.Header().Get(idemhttp.ReplayedHeader) != "true" {
				t.Fatalf("after completion: %d %q %v", w.Code, w.Body, w.Header())
			}
		})
	}
}

func TestConflictWaitReplays(t *testing.T) {
	g := newGate(http.StatusCreated)
	eng := idem.New(newStore(t), idem.WithConflictWait(10*time.Second, 0))
	mw := idemhttp.Middleware(eng, idemhttp.Options{})(g)

	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- serve(mw, request("POST", "/p", "k", "{}")) }()
	<-g.entered
	second := make(chan *httptest.ResponseRecorder)
	go func() { second <- serve(mw, request("POST", "/p", "k", "{}")) }()

	select {
	case w := <-second:
		t.Fatalf("duplicate answered %d while the first is in flight; want it to wait", w.Code)
	case <-time.After(50 * time.Millisecond):
	}
	close(g.release)
	a, b := <-first, <-second
	if a.Code != 201 || b.Code != 201 || a.Body.String() != b.Body.String() || b.Header().Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("first %d %q, waiting duplicate %d %q %v", a.Code, a.Body, b.Code, b.Body, b.Header())
	}
	if n := g.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times", n)
	}
}

// TestConcurrentDuplicates sends 100 identical requests at once over real
// connections: the handler runs exactly once; every other client gets 409
// or the replay of that one response.
func TestConcurrentDuplicates(t *testing.T) {
	const clients = 100
	tests := []struct {
		name string
		opts []idem.Option
		wait bool // every duplicate must get the replay
	}{
		{"409 or replay", nil, false},
		{"conflict wait replays", []idem.Option{idem.WithConflictWait(30*time.Second, time.Millisecond)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &counter{}
			slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(50 * time.Millisecond)
				h.ServeHTTP(w, r)
			})
			srv := httptest.NewServer(idemhttp.Middleware(idem.New(newStore(t), tt.opts...), idemhttp.Options{})(slow))
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			defer client.CloseIdleConnections()

			type answer struct {
				status   int
				replayed bool
				body     []byte
			}
			answers := make([]answer, clients)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					<-start
					resp, b, err := tryPost(client, srv.URL, "same-key", `{"amount":100,"currency":"EUR"}`)
					if err != nil {
						t.Error(err)
						return
					}
					answers[i] = answer{resp.StatusCode, resp.Header.Get(idemhttp.ReplayedHeader) == "true", b}
				})
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}

			if n := h.runs.Load(); n != 1 {
				t.Fatalf("handler ran %d times, want 1", n)
			}
			var original []byte
			for _, a := range answers {
				if a.status == 201 && !a.replayed {
					if original != nil {
						t.Fatal("two clients got an original response")
					}
					original = a.body
				}
			}
			if original == nil {
				t.Fatal("no client got the original response")
			}
			var conflicts, replays int
			for _, a := range answers {
				switch {
				case a.status == 409 && !tt.wait:
					conflicts++
				case a.status == 201 && a.replayed:
					replays++
					if !bytes.Equal(a.body, original) {
						t.Fatalf("replay %q differs from original %q", a.body, original)
					}
				case a.status == 201:
				default:
					t.Fatalf("unexpected answer %d %q (replayed %v)", a.status, a.body, a.replayed)
				}
			}
			if conflicts+replays != clients-1 {
				t.Fatalf("%d conflicts + %d replays, want %d", conflicts, replays, clients-1)
			}
			t.Logf("%d conflicts, %d replays", conflicts, replays)
		})
	}
}

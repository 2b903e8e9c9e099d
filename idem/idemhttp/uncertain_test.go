package idemhttp_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// TestUncertainOutcomeEndToEnd: a handler whose upstream timed out answers
// 504, which Options.UncertainStatus names; the client and every retry,
// even past the lease, get 409 operation_uncertain and the handler never
// runs again; once resolved as applied the retry replays the response the
// operator gave; resolved as not applied the next request runs anew.
func TestUncertainOutcomeEndToEnd(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(map[bool]string{true: "applied", false: "not-applied"}[applied], func(t *testing.T) {
			store := newStore(t)
			e := idem.New(store, idem.WithLeaseTTL(50*time.Millisecond))
			defer e.Close()
			var runs atomic.Int64
			h := idemhttp.Middleware(e, idemhttp.Options{
				UncertainStatus: func(status int) bool { return status == http.StatusGatewayTimeout },
			})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if runs.Add(1) == 1 {
					w.WriteHeader(http.StatusGatewayTimeout)
					return
				}
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte("charged again"))
			}))
			for i := range 2 {
				w := serve(h, request("POST", "/pay", "k", `{"amount":1}`))
				p := problem(t, w)
				if w.Code != http.StatusConflict || p.Reason != idemhttp.ReasonOperationUncertain ||
					p.Type != idemhttp.ProblemTypeUncertain || p.SafeNewKey == nil || *p.SafeNewKey || p.Retry != idemhttp.RetryNone {
					t.Fatalf("request %d: %d %+v; want 409 operation_uncertain, safe_new_key false", i, w.Code, p)
				}
				time.Sleep(60 * time.Millisecond) // past the lease
			}
			if n := runs.Load(); n != 1 {
				t.Fatalf("handler ran %d times, want once", n)
			}
			rec, err := store.Get(t.Context(), "k")
			if err != nil || rec.Status != idem.StatusUncertain {
				t.Fatalf("stored record %+v, %v; want uncertain", rec, err)
			}
			var resp *idem.Response
			if applied {
				resp = &idem.Response{Status: 201, Header: map[string][]string{"Location": {"/payments/7"}}, Body: []byte("settled")}
			}
			if err := e.Resolve(t.Context(), "k", rec.Token+1, resp); err == nil {
				t.Fatal("Resolve with another token succeeded")
			}
			if err := e.Resolve(t.Context(), "k", rec.Token, resp); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			w := serve(h, request("POST", "/pay", "k", `{"amount":1}`))
			if applied {
				if w.Code != 201 || w.Body.String() != "settled" || w.Header().Get("Location") != "/payments/7" ||
					w.Header().Get(idemhttp.ReplayedHeader) != "true" || runs.Load() != 1 {
					t.Fatalf("after resolution as applied: %d %q %v (runs %d); want the resolved response replayed",
						w.Code, w.Body, w.Header(), runs.Load())
				}
				return
			}
			if w.Code != 201 || w.Body.String() != "charged again" || runs.Load() != 2 {
				t.Fatalf("after resolution as not applied: %d %q (runs %d); want a new execution", w.Code, w.Body, runs.Load())
			}
		})
	}
}

// TestFaithfulReplay: by default the replay carries the status, the body
// and Content-Type, Location and ETag byte for byte, other headers not,
// and the marker under the configured name.
func TestFaithfulReplay(t *testing.T) {
	h := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{ReplayedHeader: "Idempotent-Replayed"})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Location", "/payments/7?x=%20y")
			w.Header().Set("ETag", `W/"a b"`)
			w.Header().Set("X-Request-Id", "first")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte("{\"id\":7}\x00\xff"))
		}))
	first := serve(h, request("POST", "/pay", "k", `{}`))
	replay := serve(h, request("POST", "/pay", "k", `{}`))
	if replay.Code != first.Code || replay.Body.String() != first.Body.String() {
		t.Fatalf("replay %d %q, first %d %q", replay.Code, replay.Body, first.Code, first.Body)
	}
	for _, name := range []string{"Content-Type", "Location", "Etag"} {
		if got, want := replay.Header().Values(name), first.Header().Values(name); len(got) != 1 || got[0] != want[0] {
			t.Errorf("replayed %s = %q, want %q", name, got, want)
		}
	}
	if replay.Header().Get("X-Request-Id") != "" || first.Header().Get("X-Request-Id") != "first" {
		t.Errorf("X-Request-Id: first %q, replay %q; want it on the first response only",
			first.Header().Get("X-Request-Id"), replay.Header().Get("X-Request-Id"))
	}
	if replay.Header().Get("Idempotent-Replayed") != "true" || replay.Header().Get(idemhttp.ReplayedHeader) != "" ||
		first.Header().Get("Idempotent-Replayed") != "" {
		t.Errorf("marker: first %v, replay %v; want Idempotent-Replayed: true on the replay only", first.Header(), replay.Header())
	}
}

package idemhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

func TestResponseSizeCap(t *testing.T) {
	const limit = 100
	// The handler stores one header, "Content-Type: text/plain" (22 bytes),
	// so a body of limit-22 bytes is exactly at the cap.
	const header = len("Content-Type") + len("text/plain")
	tests := []struct {
		name       string
		status     int
		bodyLen    int
		stored     bool // the response is replayed as is
		failRecord bool // the key holds the 500 response_too_large
	}{
		{"at the cap", 200, limit - header, true, false},
		{"one byte over", 200, limit - header + 1, false, true},
		{"far over, many writes", 201, 10 * limit, false, true},
		{"4xx over", 404, 3 * limit, false, true},
		{"5xx over is released", 503, 3 * limit, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t)
			body := strings.Repeat("x", tt.bodyLen)
			var runs int
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(tt.status)
				for i := 0; i < len(body); i += 7 { // many small writes cross the cap mid-write
					io.WriteString(w, body[i:min(i+7, len(body))])
				}
			})
			srv := httptest.NewServer(idemhttp.Middleware(idem.New(store), idemhttp.Options{MaxResponseSize: limit})(h))
			defer srv.Close()

			first, b := post(t, srv.Client(), srv.URL, "k", "{}")
			if first.StatusCode != tt.status || string(b) != body {
				t.Fatalf("first client got %d and %d bytes, want %d and %d bytes", first.StatusCode, len(b), tt.status, len(body))
			}
			rec, err := store.Get(context.Background(), "k")
			switch {
			case tt.stored:
				if err != nil || rec.Status != idem.StatusCompleted {
					t.Fatalf("record %+v, %v; want completed", rec, err)
				}
			case tt.failRecord:
				if err != nil || rec.Status != idem.StatusFailed || rec.Response.Status != 500 {
					t.Fatalf("record %+v, %v; want failed with 500", rec, err)
				}
			default:
				if !errors.Is(err, idem.ErrNotFound) {
					t.Fatalf("record %+v, %v; want released", rec, err)
				}
			}

			second, b := post(t, srv.Client(), srv.URL, "k", "{}")
			switch {
			case tt.stored:
				if second.StatusCode != tt.status || string(b) != body || second.Header.Get(idemhttp.ReplayedHeader) != "true" || runs != 1 {
					t.Fatalf("replay: %d, %d bytes, runs %d", second.StatusCode, len(b), runs)
				}
			case tt.failRecord:
				if second.StatusCode != 500 || second.Header.Get(idemhttp.ReplayedHeader) != "true" || runs != 1 {
					t.Fatalf("replay: %d %q, runs %d; want replayed 500", second.StatusCode, b, runs)
				}
				if p := decodeProblem(t, second.StatusCode, second.Header, b); p.Reason != idemhttp.ReasonResponseTooLarge {
					t.Fatalf("replay reason %q", p.Reason)
				}
			default:
				if runs != 2 || second.StatusCode != tt.status || string(b) != body {
					t.Fatalf("retry after release: %d, %d bytes, runs %d", second.StatusCode, len(b), runs)
				}
			}
		})
	}
}

// With a middleware cap above the engine's, the engine's own rule applies:
// the first client gets the full response, the key holds the engine's 500,
// and OnError hears about it.
func TestEngineCapBelowMiddlewareCap(t *testing.T) {
	store := newStore(t)
	var log errorLog
	body := strings.Repeat("y", 200)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	eng := idem.New(store, idem.WithMaxResponseSize(100))
	mw := idemhttp.Middleware(eng, idemhttp.Options{OnError: log.record})(h)

	w := serve(mw, request("POST", "/p", "k", "{}"))
	if w.Code != 200 || w.Body.String() != body {
		t.Fatalf("first: %d, %d bytes", w.Code, w.Body.Len())
	}
	if errs := log.all(); len(errs) != 1 || !errors.Is(errs[0], idem.ErrResponseTooLarge) {
		t.Fatalf("OnError got %v", errs)
	}
	w = serve(mw, request("POST", "/p", "k", "{}"))
	if w.Code != 500 || w.Header().Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("replay: %d %q", w.Code, w.Body)
	}
}

func TestNoResponseCap(t *testing.T) {
	body := strings.Repeat("z", 3<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	eng := idem.New(newStore(t), idem.WithMaxResponseSize(-1))
	mw := idemhttp.Middleware(eng, idemhttp.Options{MaxResponseSize: -1})(h)
	serve(mw, request("POST", "/p", "k", "{}"))
	w := serve(mw, request("POST", "/p", "k", "{}"))
	if w.Code != 200 || w.Body.String() != body || w.Header().Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("replay: %d, %d bytes", w.Code, w.Body.Len())
	}
}

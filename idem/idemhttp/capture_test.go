package idemhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// TestHandlerWriterEdges checks that the buffering writer behaves like
// net/http's for the odd things handlers do, on the first response and the
// replay alike.
func TestHandlerWriterEdges(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		status  int
		body    string
		ctype   string
	}{
		{"informational status is not final", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
		}, 201, "", ""},
		{"second WriteHeader ignored", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "{}")
		}, 202, "{}", "text/plain; charset=utf-8"},
		{"no body allowed on 204", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			if _, err := io.WriteString(w, "dropped"); !errors.Is(err, http.ErrBodyNotAllowed) {
				t.Errorf("write on 204: %v", err)
			}
		}, 204, "", ""},
		{"empty write", func(w http.ResponseWriter, r *http.Request) {
			w.Write(nil)
		}, 200, "", ""},
		{"no sniffing with Content-Encoding", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, "<html>")
		}, 200, "<html>", ""},
		{"sniffed html", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>")
		}, 200, "<html>", "text/html; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{})(tt.handler)
			for i, replayed := range []bool{false, true} {
				w := serve(mw, request("POST", "/p", "k", "{}"))
				if w.Code != tt.status || w.Body.String() != tt.body || w.Header().Get("Content-Type") != tt.ctype {
					t.Fatalf("response %d: %d %q %q; want %d %q %q", i, w.Code, w.Body, w.Header().Get("Content-Type"), tt.status, tt.body, tt.ctype)
				}
				if got := w.Header().Get(idemhttp.ReplayedHeader) == "true"; got != replayed {
					t.Fatalf("response %d: replayed %v", i, got)
				}
			}
		})
	}
}

func TestInvalidStatusPanicsAndReleases(t *testing.T) {
	store := newStore(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(42) })
	mw := idemhttp.Middleware(idem.New(store), idemhttp.Options{})(h)
	func() {
		defer func() {
			if v := recover(); v == nil || !strings.Contains(v.(string), "invalid WriteHeader code 42") {
				t.Fatalf("recovered %v", v)
			}
		}()
		serve(mw, request("POST", "/p", "k", "{}"))
	}()
	if _, err := store.Get(context.Background(), "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("key after panic: %v", err)
	}
}

func TestRequestBodyEdges(t *testing.T) {
	big := strings.Repeat("b", 2*idemhttp.DefaultMaxRequestBody)
	tests := []struct {
		name   string
		opts   idemhttp.Options
		body   io.Reader
		status int
		reason string
	}{
		{"unreadable body", idemhttp.Options{}, iotest.ErrReader(errors.New("connection reset")), 400, idemhttp.ReasonUnreadableBody},
		{"default limit", idemhttp.Options{}, strings.NewReader(big), 413, idemhttp.ReasonBodyTooLarge},
		{"no limit", idemhttp.Options{MaxRequestBody: -1}, strings.NewReader(big), 201, ""},
		{"no body", idemhttp.Options{}, nil, 201, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw := idemhttp.Middleware(idem.New(newStore(t)), tt.opts)(&counter{})
			r := request("POST", "/p", "k", "")
			r.Body, r.ContentLength = io.NopCloser(tt.body), -1
			if tt.body == nil {
				r.Body, r.ContentLength = http.NoBody, 0
			}
			w := serve(mw, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d (%q)", w.Code, tt.status, w.Body)
			}
			if tt.reason != "" {
				if p := problem(t, w); p.Reason != tt.reason {
					t.Fatalf("reason %q", p.Reason)
				}
			}
		})
	}
}

func TestStatusErrorMessage(t *testing.T) {
	err := &idemhttp.StatusError{Status: 503}
	if got := err.Error(); got != "idemhttp: handler answered 503; key released for retry" {
		t.Fatal(got)
	}
}

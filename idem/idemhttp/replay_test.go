package idemhttp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"regexp"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// post sends a POST with key and body to url and returns the response with
// its body read (and still readable from resp.Body).
func post(t *testing.T, c *http.Client, url, key, body string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := tryPost(c, url, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// tryPost is post for goroutines other than the test's.
func tryPost(c *http.Client, url, key, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemhttp.DefaultHeader, key)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, b, nil
}

var dateLine = regexp.MustCompile(`(?m)^Date: .*\r\n`)

// wire returns the response as it came over the wire, without the Date
// header (which net/http sets per response).
func wire(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := httputil.DumpResponse(resp, true)
	if err != nil {
		t.Fatal(err)
	}
	return dateLine.ReplaceAll(b, nil)
}

func TestReplayIsByteIdentical(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"json with headers", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Add("X-Trace", "a")
			w.Header().Add("X-Trace", "b")
			w.Header().Add("Set-Cookie", "s=1")
			w.WriteHeader(http.StatusCreated)
			w.Header().Set("X-Late", "ignored, as net/http ignores it")
			io.WriteString(w, `{"id":"pay_1",`)
			io.WriteString(w, `"status":"ok"}`)
		}},
		{"sniffed content type", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html><body>created</body></html>")
		}},
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {}},
		{"no content", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }},
		{"explicit content length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		}},
		{"stored 4xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "amount must be positive", http.StatusBadRequest)
		}},
		{"large body in chunks", func(w http.ResponseWriter, r *http.Request) {
			chunk := bytes.Repeat([]byte("0123456789abcdef"), 1024)
			for range 16 {
				w.Write(chunk)
			}
		}},
		{"trailer is dropped both times", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			w.Header().Set("X-Sum", "42")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs int
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs++; tt.handler(w, r) })
			srv := httptest.NewServer(idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{ReplayHeaders: []string{idemhttp.AllHeaders}})(h))
			defer srv.Close()

			first, _ := post(t, srv.Client(), srv.URL, "k", `{"a":1}`)
			second, _ := post(t, srv.Client(), srv.URL, "k", `{"a":1}`)
			if runs != 1 {
				t.Fatalf("handler ran %d times", runs)
			}
			if first.Header.Get(idemhttp.ReplayedHeader) != "" {
				t.Fatalf("first response carries %s", idemhttp.ReplayedHeader)
			}
			if second.Header.Get(idemhttp.ReplayedHeader) != "true" {
				t.Fatalf("second response lacks %s: true", idemhttp.ReplayedHeader)
			}
			a := wire(t, first)
			b := bytes.Replace(wire(t, second), []byte(idemhttp.ReplayedHeader+": true\r\n"), nil, 1)
			if !bytes.Equal(a, b) {
				t.Fatalf("replay differs:\nfirst:\n%s\nreplay:\n%s", a, b)
			}
		})
	}
}

func TestStoragePolicy(t *testing.T) {
	tests := []struct {
		name   string
		opts   idemhttp.Options
		status int
		stored bool
	}{
		{"2xx stored", idemhttp.Options{}, 201, true},
		{"3xx stored", idemhttp.Options{}, 303, true},
		{"4xx stored", idemhttp.Options{}, 409, true},
		{"500 released", idemhttp.Options{}, 500, false},
		{"503 released", idemhttp.Options{}, 503, false},
		{"custom: 5xx stored", idemhttp.Options{StoreStatus: func(int) bool { return true }}, 502, true},
		{"custom: 4xx released", idemhttp.Options{StoreStatus: func(s int) bool { return s < 400 }}, 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t)
			var runs int
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				w.WriteHeader(tt.status)
				io.WriteString(w, "answer "+itoa(int64(runs)))
			})
			mw := idemhttp.Middleware(idem.New(store), tt.opts)(h)

			w := serve(mw, request("POST", "/p", "k", `{}`))
			if w.Code != tt.status || w.Body.String() != "answer 1" {
				t.Fatalf("first: %d %q, want %d %q", w.Code, w.Body, tt.status, "answer 1")
			}
			_, err := store.Get(context.Background(), "k")
			if stored := err == nil; stored != tt.stored {
				t.Fatalf("record present = %v (err %v), want %v", stored, err, tt.stored)
			}
			w = serve(mw, request("POST", "/p", "k", `{}`))
			wantRuns, wantBody := 2, "answer 2"
			if tt.stored {
				wantRuns, wantBody = 1, "answer 1"
			}
			if runs != wantRuns || w.Code != tt.status || w.Body.String() != wantBody {
				t.Fatalf("second: %d %q after %d runs, want %d %q after %d", w.Code, w.Body, runs, tt.status, wantBody, wantRuns)
			}
			if got := w.Header().Get(idemhttp.ReplayedHeader) == "true"; got != tt.stored {
				t.Fatalf("second replayed = %v, want %v", got, tt.stored)
			}
		})
	}
}

func TestPanicReleasesKeyAndRepanics(t *testing.T) {
	store := newStore(t)
	var runs int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("X-Partial", "never sent")
		io.WriteString(w, "partial")
		if runs == 1 {
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	})
	mw := idemhttp.Middleware(idem.New(store), idemhttp.Options{})(h)

	w := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the handler's panic", v)
			}
		}()
		mw.ServeHTTP(w, request("POST", "/p", "k", `{}`))
	}()
	if w.Body.Len() != 0 || w.Header().Get("X-Partial") != "" {
		t.Fatalf("buffered response leaked after panic: %q %v", w.Body, w.Header())
	}
	if _, err := store.Get(context.Background(), "k"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("key after panic: %v, want released", err)
	}
	w = serve(mw, request("POST", "/p", "k", `{}`))
	if runs != 2 || w.Code != http.StatusOK || w.Body.String() != "partial" {
		t.Fatalf("retry after panic: %d %q after %d runs", w.Code, w.Body, runs)
	}
}

func TestPanicOverTheWire(t *testing.T) {
	var runs int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		if runs == 1 {
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	})
	srv := httptest.NewUnstartedServer(idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{})(h))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
	req.Header.Set(idemhttp.DefaultHeader, "k")
	if resp, err := srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("panicking handler answered %d; want the connection closed", resp.StatusCode)
	}
	resp, _ := post(t, srv.Client(), srv.URL, "k", "{}")
	if resp.StatusCode != http.StatusCreated || runs != 2 {
		t.Fatalf("retry: %d after %d runs", resp.StatusCode, runs)
	}
}

func TestStoredHeaders(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Keep", "1")
		w.Header().Set("X-Drop", "2")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header()["x-lower"] = []string{"raw name"}
		io.WriteString(w, "ok")
	})
	outer := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Outer", "set by outer middleware")
			next.ServeHTTP(w, r)
		})
	}
	tests := []struct {
		name     string
		opts     idemhttp.Options
		replayed []string // headers the replay has
		absent   []string // headers the replay lacks
	}{
		{"all but hop-by-hop", idemhttp.Options{ReplayHeaders: []string{idemhttp.AllHeaders}},
			[]string{"Content-Type", "X-Keep", "X-Drop", "x-lower", "X-Outer"}, []string{"Keep-Alive"}},
		{"default allowlist", idemhttp.Options{},
			[]string{"Content-Type", "X-Outer"}, []string{"X-Keep", "X-Drop", "x-lower", "Keep-Alive"}},
		{"selected headers", idemhttp.Options{ReplayHeaders: []string{"content-type", "X-KEEP", "Keep-Alive"}},
			[]string{"Content-Type", "X-Keep", "X-Outer"}, []string{"X-Drop", "Keep-Alive", "x-lower"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t)
			mw := outer(idemhttp.Middleware(idem.New(store), tt.opts)(handler))
			first := serve(mw, request("POST", "/p", "k", `{}`))
			for _, h := range []string{"X-Keep", "X-Drop", "X-Outer", "Keep-Alive"} {
				if first.Header().Get(h) == "" {
					t.Errorf("first response lacks %s", h)
				}
			}
			rec, err := store.Get(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rec.Response.Header["X-Outer"]; ok {
				t.Errorf("stored a header set outside the middleware: %v", rec.Response.Header)
			}
			replay := serve(mw, request("POST", "/p", "k", `{}`))
			for _, h := range tt.replayed {
				if !hasHeader(replay.Header(), h) {
					t.Errorf("replay lacks %s: %v", h, replay.Header())
				}
			}
			for _, h := range tt.absent {
				if hasHeader(replay.Header(), h) {
					t.Errorf("replay has %s: %v", h, replay.Header())
				}
			}
		})
	}
}

func TestHandlerGetsBodyAndLease(t *testing.T) {
	var got string
	var leased bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		_, leased = idem.LeaseFrom(r.Context())
		if r.ContentLength != int64(len(b)) {
			t.Errorf("ContentLength %d for %d bytes", r.ContentLength, len(b))
		}
	})
	mw := idemhttp.Middleware(idem.New(newStore(t)), idemhttp.Options{})(h)
	serve(mw, request("POST", "/p", "k", `{"amount":1}`))
	if got != `{"amount":1}` || !leased {
		t.Fatalf("handler saw body %q, lease %v", got, leased)
	}
}

// hasHeader reports whether h has name, under its canonical or its raw
// spelling (net/http writes names set directly in the map as they are).
func hasHeader(h http.Header, name string) bool {
	return len(h[name]) > 0 || h.Get(name) != ""
}

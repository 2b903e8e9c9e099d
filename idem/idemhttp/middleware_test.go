package idemhttp_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// step is one request of a scenario and what must come back.
type step struct {
	method, target, key, body string
	edit                      func(r *http.Request) // optional changes to the request

	status   int
	reason   string // problem reason; empty for a handler response
	replayed bool
	runs     int64 // handler runs after this step
}

func TestStatusCodes(t *testing.T) {
	longKey := strings.Repeat("k", idem.MaxKeyLen)
	tenant := func(name string) func(r *http.Request) {
		return func(r *http.Request) { r.Header.Set("X-Tenant", name) }
	}
	const payment = `{"amount":100,"currency":"EUR"}`
	tests := []struct {
		name  string
		opts  idemhttp.Options
		steps []step
	}{
		{name: "unguarded method passes without key", steps: []step{
			{method: "GET", target: "/p", status: 201, runs: 1},
			{method: "GET", target: "/p", status: 201, runs: 2},
		}},
		{name: "missing required key", steps: []step{
			{method: "POST", target: "/p", body: payment, status: 400, reason: idemhttp.ReasonMissingKey},
		}},
		{name: "missing optional key passes through", opts: idemhttp.Options{Optional: true}, steps: []step{
			{method: "POST", target: "/p", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p", body: payment, status: 201, runs: 2},
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 3},
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, replayed: true, runs: 3},
		}},
		{name: "empty key on optional route", opts: idemhttp.Options{Optional: true}, steps: []step{
			{method: "POST", target: "/p", edit: func(r *http.Request) { r.Header["Idempotency-Key"] = []string{""} },
				status: 400, reason: idemhttp.ReasonInvalidKey},
		}},
		{name: "key with a space", steps: []step{
			{method: "POST", target: "/p", key: "a b", status: 400, reason: idemhttp.ReasonInvalidKey},
		}},
		{name: "key not ASCII", steps: []step{
			{method: "POST", target: "/p", key: "clé", status: 400, reason: idemhttp.ReasonInvalidKey},
		}},
		{name: "key too long", steps: []step{
			{method: "POST", target: "/p", key: longKey + "k", status: 400, reason: idemhttp.ReasonInvalidKey},
		}},
		{name: "key of maximal length", steps: []step{
			{method: "POST", target: "/p", key: longKey, status: 201, runs: 1},
		}},
		{name: "header repeated", steps: []step{
			{method: "POST", target: "/p", key: "a", edit: func(r *http.Request) { r.Header.Add("Idempotency-Key", "b") },
				status: 400, reason: idemhttp.ReasonInvalidKey},
		}},
		{name: "same request replays", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, replayed: true, runs: 1},
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, replayed: true, runs: 1},
		}},
		{name: "different body", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: `{"amount":101,"currency":"EUR"}`, status: 422, reason: idemhttp.ReasonFingerprintMismatch, runs: 1},
		}},
		{name: "different path", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/q", key: "k", body: payment, status: 422, reason: idemhttp.ReasonFingerprintMismatch, runs: 1},
		}},
		{name: "different query", steps: []step{
			{method: "POST", target: "/p?a=1&b=2", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p?b=2&a=1", key: "k", body: payment, status: 201, replayed: true, runs: 1},
			{method: "POST", target: "/p?a=1&b=3", key: "k", body: payment, status: 422, reason: idemhttp.ReasonFingerprintMismatch, runs: 1},
		}},
		{name: "different method", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "PATCH", target: "/p", key: "k", body: payment, status: 422, reason: idemhttp.ReasonFingerprintMismatch, runs: 1},
		}},
		{name: "reordered JSON is the same request", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: "{ \"currency\": \"EUR\",\n  \"amount\": 100 }", status: 201, replayed: true, runs: 1},
		}},
		{name: "reordered JSON with charset parameter", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: `{"currency":"EUR","amount":100}`,
				edit:   func(r *http.Request) { r.Header.Set("Content-Type", "application/json; charset=utf-8") },
				status: 201, replayed: true, runs: 1},
		}},
		{name: "reordered JSON with RawJSON differs", opts: idemhttp.Options{Fingerprint: idemhttp.NewFingerprinter(idemhttp.FingerprintOptions{RawJSON: true})}, steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: `{"currency":"EUR","amount":100}`, status: 422, reason: idemhttp.ReasonFingerprintMismatch, runs: 1},
		}},
		{name: "reordered body that is not JSON differs", steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, edit: textPlain, status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: `{"currency":"EUR","amount":100}`, edit: textPlain, status: 422, reason: idemhttp.ReasonFingerprintMismatch, runs: 1},
		}},
		{name: "custom header name", opts: idemhttp.Options{Header: "X-Request-Key"}, steps: []step{
			{method: "POST", target: "/p", key: "k", status: 400, reason: idemhttp.ReasonMissingKey},
			{method: "POST", target: "/p", edit: func(r *http.Request) { r.Header.Set("x-request-key", "k") }, status: 201, runs: 1},
			{method: "POST", target: "/p", edit: func(r *http.Request) { r.Header.Set("X-Request-Key", "k") }, status: 201, replayed: true, runs: 1},
		}},
		{name: "custom methods", opts: idemhttp.Options{Methods: []string{"PUT"}}, steps: []step{
			{method: "POST", target: "/p", status: 201, runs: 1},
			{method: "PUT", target: "/p", status: 400, reason: idemhttp.ReasonMissingKey, runs: 1},
		}},
		{name: "body above limit", opts: idemhttp.Options{MaxRequestBody: 8}, steps: []step{
			{method: "POST", target: "/p", key: "k", body: "123456789", status: 413, reason: idemhttp.ReasonBodyTooLarge},
			{method: "POST", target: "/p", key: "k", body: "123456789", edit: unknownLength, status: 413, reason: idemhttp.ReasonBodyTooLarge},
			{method: "POST", target: "/p", key: "k", body: "12345678", edit: unknownLength, status: 201, runs: 1},
		}},
		{name: "scoped keys", opts: idemhttp.Options{Scope: func(r *http.Request) string { return r.Header.Get("X-Tenant") }}, steps: []step{
			{method: "POST", target: "/p", key: "k", body: payment, edit: tenant("acme"), status: 201, runs: 1},
			{method: "POST", target: "/p", key: "k", body: payment, edit: tenant("globex"), status: 201, runs: 2},
			{method: "POST", target: "/p", key: "k", body: payment, edit: tenant("acme"), status: 201, replayed: true, runs: 2},
			{method: "POST", target: "/p", key: "k", body: payment, edit: tenant("a:b"), status: 400, reason: idemhttp.ReasonInvalidKey, runs: 2},
		}},
		{name: "fingerprint error", opts: idemhttp.Options{Fingerprint: func(*http.Request, []byte) (idem.Fingerprint, error) {
			return idem.Fingerprint{}, errors.New("no")
		}}, steps: []step{
			{method: "POST", target: "/p", key: "k", status: 400, reason: idemhttp.ReasonFingerprintFailed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &counter{}
			mw := idemhttp.Middleware(idem.New(newStore(t)), tt.opts)(h)
			for i, s := range tt.steps {
				r := request(s.method, s.target, s.key, s.body)
				if s.edit != nil {
					s.edit(r)
				}
				w := serve(mw, r)
				if w.Code != s.status {
					t.Fatalf("step %d: status %d, want %d (body %q)", i, w.Code, s.status, w.Body.String())
				}
				if s.reason != "" {
					if p := problem(t, w); p.Reason != s.reason {
						t.Fatalf("step %d: reason %q, want %q", i, p.Reason, s.reason)
					}
				}
				if got := w.Header().Get(idemhttp.ReplayedHeader) == "true"; got != s.replayed {
					t.Fatalf("step %d: replayed %v, want %v", i, got, s.replayed)
				}
				if got := h.runs.Load(); got != s.runs {
					t.Fatalf("step %d: %d handler runs, want %d", i, got, s.runs)
				}
			}
		})
	}
}

func textPlain(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }

func unknownLength(r *http.Request) { r.ContentLength = -1 }

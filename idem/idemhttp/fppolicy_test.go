package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

func TestFingerprintPolicy(t *testing.T) {
	type req struct{ target, body string }
	fpOf := func(t *testing.T, o idemhttp.FingerprintOptions, q req) idem.Fingerprint {
		t.Helper()
		f, err := idemhttp.NewFingerprintPolicy(o)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("POST", q.target, strings.NewReader(q.body))
		r.Header.Set("Content-Type", "application/json")
		fp, err := f(r, []byte(q.body))
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	incl := idemhttp.FingerprintOptions{Policy: "p/v1", JSONInclude: []string{"/amount", "/card/last4", "/a~1b"}}
	excl := idemhttp.FingerprintOptions{Policy: "p/v1", JSONExclude: []string{"/meta/trace", "/nonce"}}
	query := idemhttp.FingerprintOptions{Policy: "p/v1", Query: []string{"currency"}}
	tests := []struct {
		name string
		o    idemhttp.FingerprintOptions
		a, b req
		same bool
	}{
		{"include: other members ignored", incl, req{"/p", `{"amount":1,"card":{"last4":"4242","exp":"01/30"},"x":1}`},
			req{"/p", `{"x":2,"card":{"exp":"02/31","last4":"4242"},"amount":1}`}, true},
		{"include: selected member differs", incl, req{"/p", `{"amount":1}`}, req{"/p", `{"amount":2}`}, false},
		{"include: number literal kept", incl, req{"/p", `{"amount":1}`}, req{"/p", `{"amount":1.0}`}, false},
		{"include: absent differs from null", incl, req{"/p", `{"amount":1}`}, req{"/p", `{"amount":1,"card":{"last4":null}}`}, false},
		{"include: escaped pointer", incl, req{"/p", `{"a/b":1}`}, req{"/p", `{"a/b":2}`}, false},
		{"exclude: excluded members ignored", excl, req{"/p", `{"amount":1,"meta":{"trace":"a","tag":"t"},"nonce":1}`},
			req{"/p", `{"meta":{"tag":"t","trace":"b"},"amount":1}`}, true},
		{"exclude: the rest counts", excl, req{"/p", `{"amount":1,"meta":{"tag":"t"}}`}, req{"/p", `{"amount":1,"meta":{"tag":"u"}}`}, false},
		{"query: other parameters ignored", query, req{"/p?currency=EUR&utm=a", `{}`}, req{"/p?utm=b&currency=EUR", `{}`}, true},
		{"query: selected parameter differs", query, req{"/p?currency=EUR", `{}`}, req{"/p?currency=USD", `{}`}, false},
		{"query: absent differs from empty", query, req{"/p", `{}`}, req{"/p?currency=", `{}`}, false},
		{"query: path still counts", query, req{"/p?currency=EUR", `{}`}, req{"/q?currency=EUR", `{}`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fpOf(t, tt.o, tt.a) == fpOf(t, tt.o, tt.b); got != tt.same {
				t.Fatalf("same fingerprint = %v, want %v", got, tt.same)
			}
		})
	}
	v2 := incl
	v2.Policy = "p/v2"
	if fpOf(t, incl, req{"/p", `{"amount":1}`}) == fpOf(t, v2, req{"/p", `{"amount":1}`}) {
		t.Error("two policy versions give the same fingerprint")
	}
	for _, bad := range []string{"amount", "/a~2", "/a~"} {
		if _, err := idemhttp.NewFingerprintPolicy(idemhttp.FingerprintOptions{JSONInclude: []string{bad}}); err == nil {
			t.Errorf("pointer %q accepted", bad)
		}
	}
}

// policyChange is the set-up of the policy-change tests: one engine on a
// fresh store, the fingerprints of policy v1 (the whole body) and v2 (the
// member /trace excluded), and a counting handler. newPolicyChange has
// already served key k's first request under v1, through a middleware
// whose FingerprintPolicy is policy.
type policyChange struct {
	store  idem.Store
	e      *idem.Engine
	v1, v2 idemhttp.FingerprintFunc
	c      *counter
}

func newPolicyChange(t *testing.T, policy string) policyChange {
	t.Helper()
	store := newStore(t)
	pc := policyChange{store: store, e: idem.New(store), c: &counter{},
		v1: idemhttp.NewFingerprinter(idemhttp.FingerprintOptions{Policy: "pay/v1"}),
		v2: idemhttp.NewFingerprinter(idemhttp.FingerprintOptions{Policy: "pay/v2", JSONExclude: []string{"/trace"}})}
	before := pc.middleware(idemhttp.Options{Fingerprint: pc.v1, FingerprintPolicy: policy})
	if w := serve(before, request("POST", "/p", "k", `{"amount":1,"trace":"a"}`)); w.Code != http.StatusCreated {
		t.Fatalf("first: %d", w.Code)
	}
	return pc
}

// middleware is the idempotency middleware with o around the counting
// handler, on the shared engine.
func (pc policyChange) middleware(o idemhttp.Options) http.Handler {
	return idemhttp.Middleware(pc.e, o)(pc.c)
}

// TestFingerprintPolicyChange: keys stored under policy v1 (whole body)
// are still recognised after the service moved to v2 (a trace member
// excluded), through Options.PriorFingerprints: a retry replays, it does
// not get 422; a different request still gets 422.
func TestFingerprintPolicyChange(t *testing.T) {
	pc := newPolicyChange(t, "")
	c := pc.c
	after := pc.middleware(idemhttp.Options{Fingerprint: pc.v2, PriorFingerprints: []idemhttp.FingerprintFunc{pc.v1}})
	noPrior := pc.middleware(idemhttp.Options{Fingerprint: pc.v2})

	if w := serve(noPrior, request("POST", "/p", "k", `{"amount":1,"trace":"a"}`)); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("v2 without the prior policy: %d, want the false 422 this option avoids", w.Code)
	}
	w := serve(after, request("POST", "/p", "k", `{"trace":"a","amount":1}`))
	if w.Code != http.StatusCreated || w.Header().Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("v2 with v1 as prior: %d %v; want the stored 201 replayed", w.Code, w.Header())
	}
	if w := serve(after, request("POST", "/p", "k", `{"amount":2,"trace":"a"}`)); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("a different request: %d, want 422", w.Code)
	}
	if w := serve(after, request("POST", "/p", "k2", `{"amount":1,"trace":"a"}`)); w.Code != http.StatusCreated {
		t.Fatalf("new key under v2: %d", w.Code)
	}
	if w := serve(after, request("POST", "/p", "k2", `{"amount":1,"trace":"b"}`)); w.Code != http.StatusCreated ||
		w.Header().Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("v2 retry with another trace: %d, want a replay", w.Code)
	}
	if n := c.runs.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

// TestFingerprintPolicyStoredWithRecord: the policy id goes with the
// record, so after a policy change a key is compared under the policy it
// was stored with: a retry replays (PriorPolicies knows v1), a different
// request gets 422, and a middleware that forgot v1 answers 409
// policy_changed for both, never a replay and never a 422 it cannot know.
func TestFingerprintPolicyStoredWithRecord(t *testing.T) {
	pc := newPolicyChange(t, "pay/v1")
	store, e, v1, v2, c := pc.store, pc.e, pc.v1, pc.v2, pc.c
	after := pc.middleware(idemhttp.Options{Fingerprint: v2, FingerprintPolicy: "pay/v2",
		PriorPolicies: map[string]idemhttp.FingerprintFunc{"pay/v1": v1}})
	forgot := pc.middleware(idemhttp.Options{Fingerprint: v2, FingerprintPolicy: "pay/v2"})

	if rec, err := store.Get(context.Background(), "k"); err != nil || rec.FingerprintPolicy != "pay/v1" {
		t.Fatalf("stored record: %+v, %v; want policy pay/v1", rec, err)
	}
	for _, body := range []string{`{"amount":1,"trace":"a"}`, `{"amount":2,"trace":"a"}`} {
		w := serve(forgot, request("POST", "/p", "k", body))
		p := problem(t, w)
		if w.Code != http.StatusConflict || p.Reason != idemhttp.ReasonPolicyChanged || p.Type != idemhttp.ProblemTypePolicyChanged ||
			p.SafeNewKey == nil || *p.SafeNewKey || p.Retry != idemhttp.RetryNone {
			t.Fatalf("v2 without v1, body %s: %d %+v; want 409 policy_changed, safe_new_key false", body, w.Code, p)
		}
	}
	w := serve(after, request("POST", "/p", "k", `{"trace":"a","amount":1}`))
	if w.Code != http.StatusCreated || w.Header().Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("v2 knowing v1: %d %v; want the stored 201 replayed", w.Code, w.Header())
	}
	if w := serve(after, request("POST", "/p", "k", `{"amount":1,"trace":"b"}`)); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("v2 knowing v1, a trace v1 counted: %d, want 422 (a different request under v1)", w.Code)
	}
	if w := serve(after, request("POST", "/p", "k2", `{"amount":1,"trace":"a"}`)); w.Code != http.StatusCreated {
		t.Fatalf("new key under v2: %d", w.Code)
	}
	if rec, err := store.Get(context.Background(), "k2"); err != nil || rec.FingerprintPolicy != "pay/v2" {
		t.Fatalf("record of the new key: %+v, %v; want policy pay/v2", rec, err)
	}
	if w := serve(forgot, request("POST", "/p", "k2", `{"amount":2,"trace":"a"}`)); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("a different request under the key's own policy: %d, want 422", w.Code)
	}
	if n := c.runs.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
	for _, bad := range []idemhttp.Options{{FingerprintPolicy: "pay v2"}, {PriorPolicies: map[string]idemhttp.FingerprintFunc{"": v1}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Middleware accepted %+v", bad)
				}
			}()
			idemhttp.Middleware(e, bad)
		}()
	}
}

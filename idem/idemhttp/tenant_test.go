package idemhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// TestUnscopedCallerCannotReadScopedReply is the tenant-isolation hole of
// issue 11: an unscoped caller that sends "alice:k1" must not get the reply
// stored for key k1 of tenant alice, neither through the engine nor through
// the middleware. It runs on memory, Redis and PostgreSQL
// (TestMiddlewareOnBackends).
func TestUnscopedCallerCannotReadScopedReply(t *testing.T) {
	ctx := context.Background()
	fp := idem.FingerprintString("POST", "/p", "{}")
	answer := func(body string) idem.Func {
		return func(context.Context) (idem.Response, error) {
			return idem.Response{Status: 201, Body: []byte(body)}, nil
		}
	}

	t.Run("engines", func(t *testing.T) {
		st := newStore(t)
		alice := idem.New(st, idem.WithScope("alice"))
		open := idem.New(st)
		if _, err := alice.Do(ctx, "k1", fp, answer("alice's secret")); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"alice:k1", ":alice:k1", "alice::k1"} {
			res, err := open.Do(ctx, key, fp, answer("mine"))
			if err != nil {
				t.Fatalf("unscoped %q: %v", key, err)
			}
			if res.Replayed || string(res.Response.Body) != "mine" {
				t.Fatalf("unscoped key %q reached another record: replayed=%v body %q", key, res.Replayed, res.Response.Body)
			}
		}
		// And the other way: alice cannot reach the unscoped records.
		res, err := alice.DoScoped(ctx, "", ":alice:k1", fp, answer("alice again"))
		if err != nil || res.Replayed {
			t.Fatalf("alice reached an unscoped record: replayed=%v err=%v", res.Replayed, err)
		}
	})

	t.Run("middleware", func(t *testing.T) {
		h := &counter{}
		opts := idemhttp.Options{Scope: func(r *http.Request) string { return r.Header.Get("X-Tenant") }}
		mw := idemhttp.Middleware(idem.New(newStore(t)), opts)(h)
		send := func(tenantID, key string) int64 {
			r := request("POST", "/p", key, `{"to":"`+tenantID+`"}`)
			r.Header.Set("X-Tenant", tenantID)
			w := serve(mw, r)
			if w.Code != http.StatusCreated {
				t.Fatalf("tenant %q key %q: status %d (%s)", tenantID, key, w.Code, w.Body.String())
			}
			if w.Header().Get(idemhttp.ReplayedHeader) == "true" {
				t.Fatalf("tenant %q key %q: replayed another request's reply %s", tenantID, key, w.Body.String())
			}
			return h.runs.Load()
		}
		send("alice", "k1")
		// A request without a tenant names alice's key in its header.
		for i, key := range []string{"alice:k1", ":alice:k1", "alice::k1"} {
			if runs := send("", key); runs != int64(i+2) {
				t.Fatalf("key %q: handler ran %d times, want %d", key, runs, i+2)
			}
		}
		// Nested tenant names cannot be forged either: tenant "a" with key
		// "b:k" is not tenant "a:b" (refused) nor tenant "a", key "b", ...
		send("a", "b:k")
		send("a", "b")
	})
}

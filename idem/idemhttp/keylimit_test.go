package idemhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemhttp"
)

// TestKeyErrorsHideTheScope is issue #23 item 6: the 400 for a key too long
// for its scope said `... (scoped "internal-acct-98765:kkkk…")`, revealing
// the server-side scope and the stored key. A client is told the limit
// that applies to its request (idem.MaxKeyLen less what the scopes add, one
// byte less for a key that contains ':'), never a scope or a stored key; a
// scope the server got wrong goes to Options.OnError. It runs on memory,
// Redis and PostgreSQL (TestMiddlewareOnBackends).
func TestKeyErrorsHideTheScope(t *testing.T) {
	const secret = "internal-acct-98765"
	const engineScope = "svc"
	scoped := idem.MaxKeyLen - len(secret) - 1 // 235
	both := scoped - len(engineScope) - 1      // 231
	tests := []struct {
		name        string
		engineScope string
		scope       string
		key         string
		status      int
		detail      string // substring of the problem's detail
		onError     bool   // OnError is told
	}{
		{"scoped key at the limit", "", secret, strings.Repeat("k", scoped), 201, "", false},
		{"scoped key above the limit", "", secret, strings.Repeat("k", scoped+1), 400,
			fmt.Sprintf("key too long: %d bytes, at most %d", scoped+1, scoped), false},
		{"scoped key with ':' at its limit", "", secret, "a:" + strings.Repeat("k", scoped-3), 201, "", false},
		{"scoped key with ':' above its limit", "", secret, "a:" + strings.Repeat("k", scoped-2), 400,
			fmt.Sprintf("key too long: %d bytes, at most %d (a key that contains ':' has one byte less)", scoped, scoped-1), false},
		{"engine and request scopes", engineScope, secret, strings.Repeat("k", both), 201, "", false},
		{"engine and request scopes above the limit", engineScope, secret, strings.Repeat("k", both+1), 400,
			fmt.Sprintf("at most %d", both), false},
		{"unscoped key with ':' above its limit", "", "", "a:" + strings.Repeat("k", idem.MaxKeyLen-2), 400,
			fmt.Sprintf("key too long: %d bytes, at most %d", idem.MaxKeyLen, idem.MaxKeyLen-1), false},
		{"unscoped key at the limit", "", "", strings.Repeat("k", idem.MaxKeyLen), 201, "", false},
		{"a space", "", secret, "a b", 400, "a space at offset 1", false},
		{"scope holding the separator", "", secret + ":x", "k", 400, "the key cannot be stored in this request's namespace", true},
		{"scope leaving no room", "", strings.Repeat("s", idem.MaxKeyLen), "k", 400, "the key cannot be stored in this request's namespace", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				errs   []error
				opts   []idem.Option
				counts = &counter{}
			)
			if tt.engineScope != "" {
				opts = append(opts, idem.WithScope(tt.engineScope))
			}
			mw := idemhttp.Middleware(idem.New(newStore(t), opts...), idemhttp.Options{
				Scope: func(*http.Request) string { return tt.scope },
				OnError: func(_ *http.Request, err error) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				},
			})(counts)
			r := request("POST", "/p", "", `{}`)
			r.Header[idemhttp.DefaultHeader] = []string{`"` + tt.key + `"`}
			w := serve(mw, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body.String())
			}
			body := w.Body.String()
			for _, hidden := range []string{secret, engineScope + ":", "scoped", "kkkkkkkkkkkkkkkk"} {
				if strings.Contains(body, hidden) {
					t.Errorf("the answer reveals %q: %s", hidden, body)
				}
			}
			if tt.status == 400 {
				if p := problem(t, w); p.Reason != idemhttp.ReasonInvalidKey || !strings.Contains(p.Detail, tt.detail) {
					t.Errorf("problem %+v, want invalid_key with detail %q", p, tt.detail)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if told := len(errs) > 0; told != tt.onError {
				t.Fatalf("OnError told %v, want %v", errs, tt.onError)
			}
			if tt.onError && (!errors.Is(errs[0], idem.ErrInvalidKey) || !strings.Contains(errs[0].Error(), "scope")) {
				t.Errorf("OnError got %v, want the scope's invalid-key error", errs[0])
			}
		})
	}
}

// refusingStore refuses every key as invalid, naming the stored key in its
// error, as a store with stricter key rules would.
type refusingStore struct{ idem.Store }

func (refusingStore) Acquire(_ context.Context, key string, _ idem.Fingerprint, _ time.Duration) (*idem.Lease, *idem.Record, error) {
	return nil, nil, fmt.Errorf("%w: the store refuses %q", idem.ErrInvalidKey, key)
}

// TestStoreKeyRefusalHidesTheStoredKey: when the store refuses a key the
// middleware accepted, the client gets 400 invalid_key without the store's
// error (which names the stored key, scope included); OnError gets it.
func TestStoreKeyRefusalHidesTheStoredKey(t *testing.T) {
	var told error
	mw := idemhttp.Middleware(idem.New(refusingStore{newStore(t)}), idemhttp.Options{
		Scope:   func(*http.Request) string { return "internal-acct-98765" },
		OnError: func(_ *http.Request, err error) { told = err },
	})(&counter{})
	w := serve(mw, request("POST", "/p", "k1", `{}`))
	if p := problem(t, w); w.Code != 400 || p.Reason != idemhttp.ReasonInvalidKey || strings.Contains(w.Body.String(), "internal-acct") {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if !errors.Is(told, idem.ErrInvalidKey) || !strings.Contains(told.Error(), "internal-acct-98765:k1") {
		t.Fatalf("OnError got %v", told)
	}
}

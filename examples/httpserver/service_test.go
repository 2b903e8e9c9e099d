package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

func TestUnknownFlaw(t *testing.T) {
	err := run(context.Background(), []string{"--flaw", "nope"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "check-then-act") {
		t.Fatalf("err %v, want an error listing the valid flaws", err)
	}
}

// provider is a fake payment provider that records the keys it is
// charged with, and fails while fail is set.
type provider struct {
	mu   sync.Mutex
	keys []string
	fail bool
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
}

// testService is a payments service served by startService.
type testService struct {
	url    string
	store  *memstore.Store
	ledger *ledger
}

// startService serves the payments service with opts (checked first) on
// a memory store, for the rest of t.
func startService(t *testing.T, opts serviceOptions) testService {
	t.Helper()
	if err := opts.check(); err != nil {
		t.Fatal(err)
	}
	svc := testService{store: memstore.New(memstore.Options{SweepInterval: -1}), ledger: newLedger()}
	t.Cleanup(func() { svc.store.Close() })
	api := httptest.NewServer(newService(idem.New(svc.store), svc.ledger, log.New(io.Discard, "", 0), opts))
	t.Cleanup(api.Close)
	svc.url = api.URL
	return svc
}

// startProvider serves a provider for the rest of t.
func startProvider(t *testing.T) (*provider, string) {
	prov := &provider{}
	ps := httptest.NewServer(prov)
	t.Cleanup(ps.Close)
	return prov, ps.URL
}

func (p *provider) setFail(fail bool) {
	p.mu.Lock()
	p.fail = fail
	p.mu.Unlock()
}

func TestDownstreamCharge(t *testing.T) {
	cases := []struct {
		flaw        string
		wantCharges int
	}{
		{"", 1},
		{flawEffectBeforeClaim, 2}, // the retry charges again
	}
	for _, tc := range cases {
		t.Run("flaw="+tc.flaw, func(t *testing.T) {
			prov, ps := startProvider(t)
			api := startService(t, serviceOptions{downstream: ps, flaw: tc.flaw}).url
			body := `{"amount":100,"currency":"EUR"}`

			prov.setFail(true)
			if st, _, _ := call(t, "POST", api+"/payments", "k1", body); st != http.StatusBadGateway {
				t.Fatalf("failed charge: status %d, want 502", st)
			}
			prov.setFail(false)
			for i := range 2 {
				st, replayed, _ := call(t, "POST", api+"/payments", "k1", body)
				if st != http.StatusCreated || replayed != (i == 1) {
					t.Fatalf("attempt %d: status %d replayed %v", i+2, st, replayed)
				}
			}
			prov.mu.Lock()
			defer prov.mu.Unlock()
			if len(prov.keys) != tc.wantCharges || prov.keys[0] != "k1" {
				t.Errorf("charges %v, want %d carrying the key k1", prov.keys, tc.wantCharges)
			}
		})
	}
}

// TestReplayPolicyFlag: a 502 from the provider is released for a retry
// under ietf and cache-2xx-only, and replayed to the retry under stripe.
func TestReplayPolicyFlag(t *testing.T) {
	for policy, replays502 := range map[string]bool{"ietf": false, "stripe": true, "cache-2xx-only": false} {
		t.Run(policy, func(t *testing.T) {
			prov, ps := startProvider(t)
			api := startService(t, serviceOptions{downstream: ps, policy: policy}).url
			body := `{"amount":100,"currency":"EUR"}`
			prov.setFail(true)
			if st, _, _ := call(t, "POST", api+"/payments", "k1", body); st != http.StatusBadGateway {
				t.Fatalf("failed charge: status %d, want 502", st)
			}
			prov.setFail(false)
			st, replayed, _ := call(t, "POST", api+"/payments", "k1", body)
			if replays502 && (st != http.StatusBadGateway || !replayed) {
				t.Fatalf("retry: %d replayed %v; want the 502 replayed", st, replayed)
			}
			if !replays502 && (st != http.StatusCreated || replayed) {
				t.Fatalf("retry: %d replayed %v; want a new execution (201)", st, replayed)
			}
		})
	}
}

// unsafeStore is a store whose configuration check reports err.
type unsafeStore struct {
	idem.Store
	err error
}

func (s unsafeStore) CheckConfig(context.Context) error { return s.err }

// TestConfigCheck: an unsafe configuration refuses to start under
// refuse, is logged under warn, and is not asked under off; a check that
// could not be made is logged.
func TestConfigCheck(t *testing.T) {
	unsafe := fmt.Errorf("%w: maxmemory-policy allkeys-lru", idem.ErrUnsafeConfig)
	unchecked := errors.New("CONFIG disabled")
	tests := []struct {
		mode    string
		err     error
		refused bool
		warned  bool
	}{
		{"refuse", unsafe, true, false},
		{"warn", unsafe, false, true},
		{"off", unsafe, false, false},
		{"refuse", unchecked, false, true},
		{"refuse", nil, false, false},
	}
	for _, tt := range tests {
		warned := false
		err := checkStoreConfig(context.Background(), unsafeStore{err: tt.err}, tt.mode, func(string, ...any) { warned = true })
		if (err != nil) != tt.refused || warned != tt.warned {
			t.Errorf("%s with %v: err %v, warned %v; want refused %v, warned %v", tt.mode, tt.err, err, warned, tt.refused, tt.warned)
		}
	}
}

package main

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/blackbox"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
)

// testLease is the lease of the recovery tests: short, so that a crashed
// request's key is taken over soon.
const testLease = 300 * time.Millisecond

// recoveryServer is the payments API on backend with recovery on, charging
// idembench's mock provider (fenced, with lookups), with hook as the
// engine's fault hook. It returns the API's URL and the provider.
func recoveryServer(t *testing.T, backend string, hook idem.Hook) (string, *blackbox.Downstream) {
	t.Helper()
	ds, err := blackbox.NewDownstream("Idempotency-Key", time.Millisecond, func() int64 { return time.Now().UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	var redisURL, postgresURL string
	switch backend {
	case "redis":
		redisURL = testenv.RedisURL(t)
	case "postgres":
		postgresURL = testenv.PostgresURL(t)
	}
	store, closeStore, err := openStore(context.Background(), backend, redisURL, postgresURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	l := newLedger()
	logger := log.New(io.Discard, "", 0)
	eng := idem.New(store, idem.WithLeaseTTL(testLease), idem.WithHook(hook),
		idem.WithRecovery(recoverPayment(newProvider(ds.URL(), true), l, logger.Printf)))
	api := httptest.NewServer(newService(eng, l, logger, serviceOptions{downstream: ds.URL(), policy: "ietf", recovery: true}))
	t.Cleanup(api.Close)
	return api.URL, ds
}

// crashOnce returns a hook that crashes the first execution of the test at
// p, as a server killed there: the lease stays until it expires.
func crashOnce(p idem.Point) idem.Hook {
	var once sync.Once
	return func(_ context.Context, at idem.Point, _ idem.Lease) error {
		crash := false
		if at == p {
			once.Do(func() { crash = true })
		}
		if crash {
			return errors.New("killed")
		}
		return nil
	}
}

// TestRecoveryAfterCrash: a request that crashed after its charge leaves
// its key in progress; once the lease expires, the retry takes the key
// over and the recovery hook completes it with the payment of the charge
// that landed, without charging again. A request that crashed before its
// charge is charged by the retry, once.
func TestRecoveryAfterCrash(t *testing.T) {
	body := `{"amount":100,"currency":"EUR"}`
	eachBackend(t, func(t *testing.T, backend string, _ []string) {
		for _, tc := range []struct {
			crashAt   idem.Point
			recovered bool
		}{
			{idem.PointAfterFn, true},
			{idem.PointBeforeFn, false},
		} {
			t.Run(tc.crashAt.String(), func(t *testing.T) {
				url, ds := recoveryServer(t, backend, crashOnce(tc.crashAt))
				key := "crash-" + tc.crashAt.String() + "-" + time.Now().Format("150405.000000000")
				if st, _, got := call(t, "POST", url+"/payments", key, body); st != http.StatusServiceUnavailable {
					t.Fatalf("crashed request: %d %s, want 503", st, got)
				}
				charged := 0
				if tc.recovered {
					charged = 1
				}
				if n := ds.Applied(key); n != charged {
					t.Fatalf("after the crash: %d charges, want %d", n, charged)
				}
				if st, _, _ := call(t, "POST", url+"/payments", key, body); st != http.StatusConflict {
					t.Fatalf("retry within the lease: %d, want 409 (in progress)", st)
				}
				time.Sleep(testLease + 100*time.Millisecond)
				st, replayed, first := call(t, "POST", url+"/payments", key, body)
				if st != http.StatusCreated || replayed != tc.recovered || !strings.Contains(first, `"amount":100`) {
					t.Fatalf("retry after the lease: %d replayed=%v %s; want 201 replayed=%v", st, replayed, first, tc.recovered)
				}
				st, replayed, again := call(t, "POST", url+"/payments", key, body)
				if st != http.StatusCreated || !replayed || again != first {
					t.Fatalf("later retry: %d replayed=%v %s, want the replay of %s", st, replayed, again, first)
				}
				if n := ds.Applied(key); n != 1 {
					t.Fatalf("%d charges for the key, want 1", n)
				}
			})
		}
	})
}

// TestSlowHolderIsFenced: a holder stalled past its lease (before its
// charge) resumes after a retry took the key over and charged; its charge
// carries the older token and the provider refuses it, so the key is
// charged once.
func TestSlowHolderIsFenced(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string, _ []string) {
		stalled, resume := make(chan struct{}), make(chan struct{})
		var once, resumeOnce sync.Once
		release := func() { resumeOnce.Do(func() { close(resume) }) }
		hook := func(_ context.Context, at idem.Point, l idem.Lease) error {
			if at == idem.PointBeforeFn && !l.TakeOver() {
				once.Do(func() { close(stalled); <-resume })
			}
			return nil
		}
		url, ds := recoveryServer(t, backend, hook)
		t.Cleanup(release) // runs before the server's cleanup, which waits for the stalled request
		key := "slow-" + time.Now().Format("150405.000000000")
		body := `{"amount":7,"currency":"EUR"}`
		slow := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("POST", url+"/payments", strings.NewReader(body))
			req.Header.Set("Idempotency-Key", key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				slow <- 0
				return
			}
			resp.Body.Close()
			slow <- resp.StatusCode
		}()
		<-stalled
		time.Sleep(testLease + 100*time.Millisecond)
		st, replayed, _ := call(t, "POST", url+"/payments", key, body)
		if st != http.StatusCreated || replayed {
			t.Fatalf("retry that took over: %d replayed=%v, want a fresh 201", st, replayed)
		}
		release()
		if st := <-slow; st != http.StatusBadGateway {
			t.Errorf("the stalled holder answered %d, want 502 (its charge refused as stale)", st)
		}
		if n := ds.Applied(key); n != 1 {
			t.Fatalf("%d charges for the key, want 1", n)
		}
		refused := 0
		for _, c := range ds.Calls() {
			if c.Key == key && c.Status == http.StatusConflict {
				refused++
			}
		}
		if refused != 1 {
			t.Errorf("%d charges refused as stale, want 1", refused)
		}
	})
}

func TestSplitStorageKey(t *testing.T) {
	for _, key := range []string{"k1", "a:b", ":x", "x:", "::"} {
		stored, err := idem.StorageKey(key, "/payments")
		if err != nil {
			t.Fatal(err)
		}
		path, got, err := splitStorageKey(stored)
		if err != nil || path != "/payments" || got != key {
			t.Errorf("splitStorageKey(%q) = %q, %q, %v; want /payments, %q", stored, path, got, err, key)
		}
	}
	for _, bad := range []string{"k1", ":k1", "/payments:x:y"} {
		if _, _, err := splitStorageKey(bad); err == nil {
			t.Errorf("splitStorageKey(%q): no error", bad)
		}
	}
}

func TestLeaseFlag(t *testing.T) {
	for _, tc := range []struct {
		flag    time.Duration
		backend string
		want    time.Duration
	}{
		{0, "memory", idem.DefaultLeaseTTL},
		{0, "redis", time.Second},
		{0, "postgres", time.Second},
		{5 * time.Second, "memory", 5 * time.Second},
		{200 * time.Millisecond, "redis", 200 * time.Millisecond},
	} {
		if got := leaseTTL(tc.flag, tc.backend); got != tc.want {
			t.Errorf("leaseTTL(%v, %s) = %v, want %v", tc.flag, tc.backend, got, tc.want)
		}
	}
}

func TestRunRefusesBadLease(t *testing.T) {
	for _, arg := range []string{"-1s", "50ms"} {
		err := run(context.Background(), []string{"--lease", arg}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--lease") {
			t.Errorf("run(--lease %s) = %v, want an error naming --lease", arg, err)
		}
	}
}

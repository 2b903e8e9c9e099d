package ownstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/examples/ownstore"
	"github.com/idembench/idembench/idem"
)

// mysqlURL returns the DSN of the test server from IDEM_MYSQL_URL (for
// example "root@tcp(127.0.0.1:3306)/test"). Without it the test skips,
// unless IDEM_REQUIRE_BACKENDS=1, where a missing server fails it: the rule
// of internal/testenv, repeated here because a user's module has no access
// to it.
func mysqlURL(t *testing.T) string {
	t.Helper()
	if url := os.Getenv("IDEM_MYSQL_URL"); url != "" {
		return url
	}
	if os.Getenv("IDEM_REQUIRE_BACKENDS") == "1" {
		t.Fatal("IDEM_MYSQL_URL is not set and IDEM_REQUIRE_BACKENDS=1")
	}
	t.Skip("set IDEM_MYSQL_URL (e.g. root@tcp(127.0.0.1:3306)/test) to run the MySQL/MariaDB store tests")
	return ""
}

func open(t *testing.T) *ownstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := ownstore.Open(ctx, mysqlURL(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	s := open(t)
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) idem.Store { return s },
		Corrupt: func(t *testing.T, st idem.Store, key string) {
			t.Helper()
			if err := ownstore.CorruptForTest(t.Context(), st.(*ownstore.Store), key); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestTokensSurviveReopen checks that the token counter is the server's and
// not the process's: a store opened again (migrations run again) goes on
// from where the first one was.
func TestTokensSurviveReopen(t *testing.T) {
	fp := idem.FingerprintString("reopen")
	key := "ownstore.reopen." + time.Now().Format(time.RFC3339Nano)
	first := open(t)
	l1, _, err := first.Acquire(t.Context(), key, fp, time.Minute)
	if err != nil || l1 == nil {
		t.Fatalf("Acquire: %v, %v", l1, err)
	}
	if err := first.Release(t.Context(), l1); err != nil {
		t.Fatal(err)
	}
	second := open(t)
	l2, _, err := second.Acquire(t.Context(), key, fp, time.Minute)
	if err != nil || l2 == nil {
		t.Fatalf("Acquire after reopen: %v, %v", l2, err)
	}
	if l2.Token <= l1.Token {
		t.Fatalf("token after reopen %d, want > %d", l2.Token, l1.Token)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := ownstore.Open(ctx, "not a dsn ("); err == nil {
		t.Error("Open of a malformed DSN: no error")
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// Nothing listens on port 1.
	if _, err := ownstore.Open(cctx, "root@tcp(127.0.0.1:1)/test"); err == nil {
		t.Error("Open of an unreachable server: no error")
	} else if !errors.Is(err, idem.ErrBackend) {
		t.Errorf("Open of an unreachable server: %v, want idem.ErrBackend", err)
	}
}

// TestEngineRunsOncePerKey drives the real engine on the store: callers
// race on shared keys, and every key's function runs exactly once, the
// others replaying its answer or seeing it in progress.
func TestEngineRunsOncePerKey(t *testing.T) {
	s := open(t)
	engine := idem.New(s, idem.WithLeaseTTL(5*time.Second), idem.WithConflictWait(5*time.Second, 5*time.Millisecond))
	const keys, callers = 40, 6
	prefix := "ownstore.once." + time.Now().Format("150405.000000") + "."
	var runs [keys]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, keys*callers)
	for c := range callers {
		wg.Go(func() {
			for i := range keys {
				k := (i + c*7) % keys
				key := prefix + strconv.Itoa(k)
				res, err := engine.Do(t.Context(), key, idem.FingerprintString(key), func(context.Context) (idem.Response, error) {
					runs[k].Add(1)
					time.Sleep(2 * time.Millisecond)
					return idem.Response{Status: 200, Body: []byte(key)}, nil
				})
				if err != nil {
					errs <- err
					continue
				}
				if string(res.Response.Body) != key {
					errs <- fmt.Errorf("key %s answered %q", key, res.Response.Body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for k := range runs {
		if n := runs[k].Load(); n != 1 {
			t.Errorf("key %d ran %d times, want once", k, n)
		}
	}
}

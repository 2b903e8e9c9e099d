package harnesstest_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/harnesstest"
	"github.com/idembench/idembench/idem"
)

// recorder is a testing.TB that records failures instead of failing the
// test that runs it; FailNow ends the goroutine as testing's does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	failed bool
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors, r.failed = append(r.errors, fmt.Sprintf(format, args...)), true
}
func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}
func (r *recorder) Fatal(args ...any) { r.Error(args...); r.FailNow() }
func (r *recorder) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}
func (r *recorder) FailNow() { r.Fail(); runtime.Goexit() }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
func (r *recorder) Helper() {}

// record runs f on a recorder over t, in a goroutine of its own (FailNow
// ends it), and returns the recorder.
func record(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// TestCatchesKnownBadDesign registers a known-bad design through the public
// API, as a store author would their own store, and checks that harnesstest
// fails it with the violation report; the same scenarios on the reference
// store pass.
func TestCatchesKnownBadDesign(t *testing.T) {
	start := time.Now()
	bad := record(t, func(tb testing.TB) {
		harnesstest.Run(tb, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
			st, err := naive.New("check-then-act", env.Clock)
			return st, nil, err
		}, harnesstest.Scenarios("duplicates", "default"), harnesstest.Named("check-then-act"))
	})
	if !bad.Failed() || len(bad.errors) == 0 {
		t.Fatal("harnesstest passed a check-then-act store: it must report the double execution")
	}
	msg := strings.Join(bad.errors, "\n")
	for _, want := range []string{"check-then-act", "duplicates seed", "verdict violation", "I1", "replay: idembench run"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure report lacks %q:\n%s", want, msg)
		}
	}
	good := record(t, func(tb testing.TB) {
		harnesstest.Run(tb, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
			st := memstore.New(memstore.Options{Clock: env.Clock})
			return st, st, nil
		}, harnesstest.Scenarios("duplicates", "default"))
	})
	if good.Failed() {
		t.Fatalf("harnesstest failed the reference store:\n%s", strings.Join(good.errors, "\n"))
	}
	t.Logf("two stores × two scenarios in %s", time.Since(start).Round(time.Millisecond))
}

// TestReferenceStore is the one line a store author writes, here for the
// reference memory store: every built-in scenario, within the budget.
func TestReferenceStore(t *testing.T) {
	start := time.Now()
	harnesstest.Run(t, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
		st := memstore.New(memstore.Options{Clock: env.Clock})
		return st, st, nil
	})
	limit := 60 * time.Second
	if testing.Short() {
		limit = 15 * time.Second
	}
	if d := time.Since(start); d > limit+5*time.Second {
		t.Errorf("harnesstest took %s, its budget is %s", d, limit)
	}
}

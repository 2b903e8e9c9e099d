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
	logs   []string
	failed bool
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Log(args ...any) { r.Logf("%s", fmt.Sprint(args...)) }

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
	for _, want := range []string{"check-then-act", "duplicates seed", "verdict violation", "I1", "replay: cd ", "go test -count=1 -run '^TestCatchesKnownBadDesign$' .", `harnesstest.Scenarios("duplicates")`} {
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

// TestSkipsScenarioTheStoreCannotRun: a correct store without idem.Lister
// (the exported reference store of backends/naive) passes the one-line
// test; abandoned-keys, whose completers need ListStuck, is skipped and the
// log says why.
func TestSkipsScenarioTheStoreCannotRun(t *testing.T) {
	r := record(t, func(tb testing.TB) {
		harnesstest.Run(tb, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
			return naive.NewReference(naive.Options{Clock: env.Clock}), nil, nil
		}, harnesstest.Scenarios("abandoned-keys", "duplicates"), harnesstest.Seeds(1), harnesstest.Named("reference"))
	})
	if r.Failed() {
		t.Fatalf("harnesstest failed a correct store without idem.Lister:\n%s", strings.Join(r.errors, "\n"))
	}
	logs := strings.Join(r.logs, "\n")
	for _, want := range []string{"scenario abandoned-keys skipped", "idem.Lister", "duplicates seed 1: ok"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "abandoned-keys seed") {
		t.Errorf("abandoned-keys ran:\n%s", logs)
	}
}

// TestLogsWhatTheBudgetDropped: runs that do not fit in the budget are not
// made, and one log line names every one of them.
func TestLogsWhatTheBudgetDropped(t *testing.T) {
	r := record(t, func(tb testing.TB) {
		harnesstest.Run(tb, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
			st := memstore.New(memstore.Options{Clock: env.Clock})
			return st, st, nil
		}, harnesstest.Scenarios("duplicates", "default"), harnesstest.Seeds(1, 2), harnesstest.Budget(time.Millisecond))
	})
	if r.Failed() {
		t.Fatalf("a spent budget failed the test:\n%s", strings.Join(r.errors, "\n"))
	}
	logs := strings.Join(r.logs, "\n")
	want := "budget of 1ms spent: 4 of 4 runs not made: duplicates seed 1, default seed 1, default seed 2, duplicates seed 2"
	if !strings.Contains(logs, want) {
		t.Errorf("the log lacks %q:\n%s", want, logs)
	}
}

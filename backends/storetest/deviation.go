package storetest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// A store declares a documented deviation from a contract or liveness case
// in Config.Deviations. The case still runs, against a recorder instead of
// the test: if it fails, its subtest passes and logs the deviation with its
// reason and what the case reported; if it passes, the declaration is out
// of date and the subtest fails. A deviation is never a silent skip.

// recorder is the testing.TB a deviating case runs against: it records
// failures and skips instead of reporting them, and stops the case's
// goroutine where the test would (Fatal, FailNow, Skip). Everything else
// (Name, Helper, Cleanup, Log, TempDir, …) is the real test's.
type recorder struct {
	testing.TB
	t *testing.T

	mu       sync.Mutex
	failures []string
	skipped  string
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Fail()                             { r.fail("the case failed") }
func (r *recorder) FailNow()                          { r.fail("the case failed"); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) Skip(args ...any) { r.skip(fmt.Sprint(args...)) }
func (r *recorder) Skipf(format string, args ...any) {
	r.skip(fmt.Sprintf(format, args...))
}
func (r *recorder) SkipNow() { r.skip("skipped") }

func (r *recorder) skip(msg string) {
	r.mu.Lock()
	r.skipped = msg
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped != ""
}

// realT returns the *testing.T behind t, which is either one or a recorder.
func realT(t testing.TB) *testing.T {
	if r, ok := t.(*recorder); ok {
		return r.t
	}
	return t.(*testing.T)
}

// runDeviating runs case c, from which the store declared a deviation for
// reason, and reports the outcome on t (see Config.Deviations).
func runDeviating(t *testing.T, c groupCase, g Group, reason string, run func(testing.TB)) {
	t.Helper()
	r := &recorder{TB: t, t: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(r)
	}()
	<-done
	switch {
	case r.skipped != "":
		t.Skip(r.skipped)
	case len(r.failures) == 0:
		t.Errorf("DEVIATION DECLARED BUT NOT SEEN: %s (%s) passes; drop it from Config.Deviations (reason given: %s)", c.name, g, reason)
	default:
		t.Logf("DOCUMENTED DEVIATION: %s (%s): %s; the case reported: %s", c.name, g, reason, strings.Join(r.failures, "; "))
	}
}

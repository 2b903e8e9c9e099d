package harness_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// builtin is the registry of the engines that ship with idembench.
var builtin = func() *harness.Registry {
	r, err := harness.NewRegistry(engines.Builtin()...)
	if err != nil {
		panic(err)
	}
	return r
}()

func engine(t *testing.T, name string) harness.StoreFactory {
	t.Helper()
	e, err := builtin.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runCase is one run of the safety matrix on the memory backend.
type runCase struct {
	scenario string
	engine   string
	sink     string
	recovery bool
	duration time.Duration
	// want is the expected verdict; for violations, anyOf lists the
	// invariants of which at least one must be reported.
	want  checker.Verdict
	anyOf []checker.Invariant
}

func (c runCase) name() string {
	return fmt.Sprintf("%s/%s/%s/recovery=%t", c.scenario, c.engine, c.sink, c.recovery)
}

// run runs c with seed and checks the outcome.
func (c runCase) run(t *testing.T, seed int64) {
	t.Helper()
	o, err := harness.Run(context.Background(), harness.Spec{
		Engine: engine(t, c.engine), ScenarioName: c.scenario, Sink: c.sink, NoRecovery: !c.recovery,
		Overrides: harness.Overrides{Seed: seed, Duration: c.duration}, CheckTimeout: time.Minute,
	})
	if err != nil {
		t.Fatalf("%s seed %d: %v", c.name(), seed, err)
	}
	rep := o.Report
	if rep.Verdict != c.want {
		t.Fatalf("%s seed %d: verdict %s, want %s (violated %v)\nreplay: %s", c.name(), seed, rep.Verdict, c.want, rep.Violated(), o.Replay)
	}
	if len(c.anyOf) > 0 {
		got := rep.Violated()
		if !slices.ContainsFunc(c.anyOf, func(inv checker.Invariant) bool { return slices.Contains(got, inv) }) {
			t.Fatalf("%s seed %d: violated %v, want one of %v", c.name(), seed, got, c.anyOf)
		}
	}
}

func seeds(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(1000 + 7919*i)
	}
	return s
}

// TestKnownBadDesignsAreCaught runs every naive design against the scenario
// that must catch it (backends/naive's table), on several seeds, with the
// default fenced sink and recovery, except no-heartbeat: the take-over it
// causes is one that a fenced sink with recovery absorbs (the successor's
// lookup raises the fence, so the slow holder's late effect is rejected),
// so it is shown where the side effect has no fence of its own, the plain
// sink, on which the reference engine passes the same scenario
// (TestSafetyMatrix).
func TestKnownBadDesignsAreCaught(t *testing.T) {
	cases := []runCase{
		{scenario: "duplicates", engine: "naive/check-then-act", anyOf: []checker.Invariant{checker.I1AtMostOnce}},
		{scenario: "duplicates", engine: "naive/cache-on-success", anyOf: []checker.Invariant{checker.I1AtMostOnce}},
		{scenario: "gc-pause", engine: "naive/unfenced-takeover", anyOf: []checker.Invariant{checker.I1AtMostOnce, checker.I3ReplayConsistency, checker.I5Fencing}},
		{scenario: "pause-then-fail", engine: "naive/delete-on-error", anyOf: []checker.Invariant{checker.I1AtMostOnce}},
		{scenario: "crash-holder", engine: "naive/no-expiry", anyOf: []checker.Invariant{checker.I6Liveness}},
		{scenario: "slow-handler", engine: "naive/no-heartbeat", sink: "plain", anyOf: []checker.Invariant{checker.I1AtMostOnce}},
		{scenario: "duplicates", engine: "naive/fail-open", anyOf: []checker.Invariant{checker.I1AtMostOnce, checker.I4Linearizable}},
		{scenario: "retryable-failures", engine: "naive/keeps-pending", anyOf: []checker.Invariant{checker.I6Liveness}},
		{scenario: "mismatched-requests", engine: "naive/unscoped-key", anyOf: []checker.Invariant{checker.I4Linearizable}},
		{scenario: "retryable-failures", engine: "naive/token-restart", anyOf: []checker.Invariant{checker.I7TokenOrder, checker.I8NoSupersededWrite}},
		{scenario: "takeover-race", engine: "naive/racy-takeover", anyOf: []checker.Invariant{checker.I7TokenOrder, checker.I8NoSupersededWrite}},
		{scenario: "stale-heartbeat", engine: "naive/unfenced-heartbeat", anyOf: []checker.Invariant{checker.I8NoSupersededWrite}},
		{scenario: "takeover-race", engine: "naive/two-step-takeover", anyOf: []checker.Invariant{checker.I7TokenOrder}},
		{scenario: "gc-pause", engine: "naive/fail-on-expiry", anyOf: []checker.Invariant{checker.I4Linearizable}},
	}
	n := 3
	if testing.Short() {
		n = 1
	}
	for _, c := range cases {
		if c.sink == "" {
			c.sink, c.recovery = "fenced", true
		}
		c.want, c.duration = checker.VerdictViolation, 1500*time.Millisecond
		t.Run(c.engine, func(t *testing.T) {
			t.Parallel()
			for _, seed := range seeds(n) {
				c.run(t, seed)
			}
		})
	}
}

// TestSafetyMatrix checks the in-process cells of docs/design/verification.md's safety
// matrix on the reference engine: every built-in scenario passes with the
// safe defaults, and the theory's unsafe cells are found.
func TestSafetyMatrix(t *testing.T) {
	ok := checker.VerdictOK
	bad := checker.VerdictViolation
	cases := []runCase{
		{scenario: "default", sink: "fenced", recovery: true, want: ok},
		{scenario: "duplicates", sink: "fenced", recovery: true, want: ok},
		{scenario: "retry-storm", sink: "fenced", recovery: true, want: ok},
		{scenario: "slow-handler", sink: "fenced", recovery: true, want: ok},
		{scenario: "gc-pause", sink: "fenced", recovery: true, want: ok},
		{scenario: "gc-pause", sink: "fenced", recovery: false, want: ok},
		{scenario: "crash-after-effect", sink: "fenced", recovery: true, want: ok},
		{scenario: "crash-holder", sink: "fenced", recovery: true, want: ok},
		{scenario: "pause-then-fail", sink: "fenced", recovery: true, want: ok},
		// Plain sink: retries and duplicates are safe without fencing, and
		// so is a slow handler, whose lease the heartbeat keeps.
		{scenario: "duplicates", sink: "plain", want: ok},
		{scenario: "slow-handler", sink: "plain", want: ok},
		// The unsafe cells.
		{scenario: "crash-after-effect", sink: "fenced", recovery: false, want: bad, anyOf: []checker.Invariant{checker.I1AtMostOnce}},
		{scenario: "crash-after-effect", sink: "plain", want: bad, anyOf: []checker.Invariant{checker.I1AtMostOnce}},
		{scenario: "gc-pause", sink: "plain", want: bad, anyOf: []checker.Invariant{checker.I1AtMostOnce}},
	}
	n := 5
	if testing.Short() {
		n = 1
	}
	for _, c := range cases {
		c.engine, c.duration = harness.ReferenceEngine, time.Second
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			for _, seed := range seeds(n) {
				c.run(t, seed)
			}
		})
	}
}

// TestNoFalseAlarms runs the default scenario on the safe configuration
// with many seeds: every run must pass.
func TestNoFalseAlarms(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 3
	}
	c := runCase{scenario: "default", engine: harness.ReferenceEngine, sink: "fenced", recovery: true, duration: time.Second, want: checker.VerdictOK}
	for _, seed := range seeds(n) {
		c.run(t, seed+1)
	}
}

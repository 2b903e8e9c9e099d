package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/scenarios"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// run executes c with seed and returns the outcome, failing t on errors.
func (c runCase) run(t *testing.T, seed int64, out string) *runOutcome {
	t.Helper()
	sc, err := scenarios.Load(c.scenario)
	if err != nil {
		t.Fatal(err)
	}
	o, err := execute(context.Background(), runSpec{
		Scenario: sc, ScenarioArg: c.scenario,
		Backend: backendMemory, Engine: c.engine, Sink: c.sink, Recovery: c.recovery,
		Seed: seed, Duration: c.duration, Rate: -1, Out: out,
		CheckTimeout: time.Minute,
	})
	if err != nil {
		t.Fatalf("%s seed %d: %v", c.name(), seed, err)
	}
	return o
}

// check compares the outcome with the expectation.
func (c runCase) check(t *testing.T, seed int64, o *runOutcome) {
	t.Helper()
	rep := o.Report
	if rep.Verdict != c.want {
		var b strings.Builder
		printVerdict(&b, rep)
		t.Fatalf("%s seed %d: verdict %s, want %s\n%s\nreplay: %s", c.name(), seed, rep.Verdict, c.want, b.String(), o.Replay)
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
				c.check(t, seed, c.run(t, seed, ""))
			}
		})
	}
}

// TestSafetyMatrix checks the in-process cells of VERIFICATION.md's safety
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
		c.engine, c.duration = engineIdem, time.Second
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			for _, seed := range seeds(n) {
				c.check(t, seed, c.run(t, seed, ""))
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
	c := runCase{scenario: "default", engine: engineIdem, sink: "fenced", recovery: true, duration: time.Second, want: checker.VerdictOK}
	for _, seed := range seeds(n) {
		c.check(t, seed+1, c.run(t, seed+1, ""))
	}
}

// TestRunDirectoryRechecks writes a run directory and re-checks it offline
// with the check subcommand: same verdict.
func TestRunDirectoryRechecks(t *testing.T) {
	dir := t.TempDir()
	c := runCase{scenario: "gc-pause", engine: engineIdem, sink: "plain", duration: time.Second, want: checker.VerdictViolation}
	o := c.run(t, 42, dir)
	c.check(t, 42, o)
	for _, f := range []string{"history.jsonl", "summary.json"} {
		if _, err := os.Stat(dir + "/" + f); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb strings.Builder
	code := realMain(context.Background(), []string{"check", dir}, stdio{out: &out, err: &errb})
	if code != exitViolation {
		t.Fatalf("check exit %d, want %d\n%s%s", code, exitViolation, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "I1") {
		t.Fatalf("check output does not name I1:\n%s", out.String())
	}
}

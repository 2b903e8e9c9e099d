package blackbox

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/workload"
)

// flawCases are the known-bad designs of examples/httpserver and how each
// must be caught: an invariant the checker must find violated, or a
// conformance probe that must fail, and the verdict class (and with it the
// exit code) the run must report. The example's target claims the
// cache-2xx-only profile, which a stored 5xx breaks.
var flawCases = []struct {
	flaw  string
	inv   checker.Invariant
	probe string
	class string
}{
	{flaw: "check-then-act", inv: checker.I1AtMostOnce, class: ClassDoubleExecution},
	{flaw: "stored-5xx", probe: ProbeErrorStored, class: ClassDeviation},
	{flaw: "unscoped-path", probe: ProbeIsolation, class: ClassDeviation},
	{flaw: "body-blind-fingerprint", probe: ProbeMismatch, class: ClassDeviation},
	{flaw: "fail-open", inv: checker.I1AtMostOnce, class: ClassDoubleExecution},
	{flaw: "rerender-replay", inv: checker.I3ReplayConsistency, probe: ProbeReplay, class: ClassBrokenReplay},
	{flaw: "effect-before-claim", inv: checker.I1AtMostOnce, class: ClassDoubleExecution},
}

// flawSpec is the workload that must catch every flaw: duplicates at
// once and later, a few mismatching bodies.
func flawSpec(tg *Target, seed int64, d time.Duration) Spec {
	return Spec{
		Target: tg, Seed: seed, Duration: d, Clients: 4,
		Keys: workload.Keys{Concurrent: 1, Delayed: 1, Delay: 20 * time.Millisecond, MismatchRate: 0.02},
	}
}

// caught reports whether the run found the flaw the way tc says: with
// class among the failed classes, the exit code of the most serious class
// that failed (the workload may find more than the probe: a body-blind
// fingerprint also breaks I4 when a mismatching copy is replayed), and the
// invariant or the probe.
func caught(out Outcome, err error, inv checker.Invariant, probe, class string) bool {
	if !slices.Contains(out.Classes, class) {
		return false
	}
	want := checker.ExitViolation
	if out.Classes[0] == ClassDeviation {
		want = checker.ExitDeviation
	}
	if checker.ExitCode(err) != want {
		return false
	}
	if inv != "" && slices.Contains(out.Check.Violated(), inv) {
		return true
	}
	for _, p := range out.Conformance {
		if p.ID == probe && p.Status == ProbeFail {
			return true
		}
	}
	return false
}

func TestFlawsCaught(t *testing.T) {
	for _, tc := range flawCases {
		t.Run(tc.flaw, func(t *testing.T) {
			tg := exampleTarget(t, "--flaw", tc.flaw)
			d := 500 * time.Millisecond
			if tc.inv == "" {
				d = 200 * time.Millisecond // a protocol flaw: the probes find it
			} else if tc.probe == "" {
				tg.Conformance.Skip = true // the workload must find it
			}
			out, err := Run(context.Background(), flawSpec(tg, 1, d))
			if !caught(out, err, tc.inv, tc.probe, tc.class) {
				t.Fatalf("flaw %s not caught as %s: err %v (exit %d), classes %v, violated %v, conformance %+v",
					tc.flaw, tc.class, err, checker.ExitCode(err), out.Classes, out.Check.Violated(), out.Conformance)
			}
		})
	}
}

// sweepSeeds returns how many seeds the sweeps run: IDEM_BLACKBOX_SWEEP
// (for example 20), or 0 to skip them.
func sweepSeeds(t *testing.T) int {
	n, _ := strconv.Atoi(os.Getenv("IDEM_BLACKBOX_SWEEP"))
	if n <= 0 || testing.Short() {
		t.Skip("set IDEM_BLACKBOX_SWEEP=20 to run the seed sweep")
	}
	return n
}

// TestFlawSweep runs every flaw on IDEM_BLACKBOX_SWEEP seeds and requires
// each to be caught on all but at most one in twenty.
func TestFlawSweep(t *testing.T) {
	n := sweepSeeds(t)
	for _, tc := range flawCases {
		hits := 0
		for seed := range int64(n) {
			out, err := Run(context.Background(), flawSpec(exampleTarget(t, "--flaw", tc.flaw), seed+1, 600*time.Millisecond))
			if caught(out, err, tc.inv, tc.probe, tc.class) {
				hits++
			}
		}
		t.Logf("%-24s caught on %d of %d seeds", tc.flaw, hits, n)
		if hits*20 < n*19 {
			t.Errorf("%s caught on %d of %d seeds, want at least 19 in 20", tc.flaw, hits, n)
		}
	}
}

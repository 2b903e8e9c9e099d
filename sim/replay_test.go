package sim_test

import (
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/sim"
	"github.com/idembench/idembench/sim/simtest"
)

// TestReplayIdentical runs every seed twice and compares the history.jsonl
// bytes: the same seed gives the same history, faults included. Every
// history must also pass the check.
func TestReplayIdentical(t *testing.T) {
	n := simtest.SeedCount(*flagSeeds, 100, 2)
	for seed := int64(1); seed <= int64(n); seed++ {
		cfg := sim.Quick(seed)
		a := sim.Run(t, opener(t, "memory", cfg), cfg)
		b := sim.Run(t, opener(t, "memory", cfg), cfg)
		if a.Faults == 0 {
			t.Errorf("seed %d: no fault injected", seed)
		}
		if a.Report.Verdict != checker.VerdictOK {
			t.Errorf("seed %d: verdict %s\n%s", seed, a.Report.Verdict, a.Summary(""))
		}
		simtest.SameHistory(t, seed, a.HistoryJSONL, b.HistoryJSONL)
	}
	t.Logf("%d seeds, each run twice: identical histories", n)
}

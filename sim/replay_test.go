package sim_test

import (
	"bytes"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/sim"
)

// TestReplayIdentical runs every seed twice and compares the history.jsonl
// bytes: the same seed gives the same history, faults included. Every
// history must also pass the check.
func TestReplayIdentical(t *testing.T) {
	n := seeds(100, 2)
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
		if bytes.Equal(a.HistoryJSONL, b.HistoryJSONL) {
			continue
		}
		la, lb := bytes.Split(a.HistoryJSONL, []byte("\n")), bytes.Split(b.HistoryJSONL, []byte("\n"))
		for i := range min(len(la), len(lb)) {
			if !bytes.Equal(la[i], lb[i]) {
				t.Fatalf("seed %d: the histories differ at line %d (%d and %d lines):\n%s\n%s", seed, i+1, len(la), len(lb), la[i], lb[i])
			}
		}
		t.Fatalf("seed %d: one history is a prefix of the other (%d and %d lines)", seed, len(la), len(lb))
	}
	t.Logf("%d seeds, each run twice: identical histories", n)
}

package sim_test

import (
	"bytes"
	"testing"

	"github.com/idembench/idembench/sim"
)

func TestReplayIdentical(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		cfg := sim.Quick(seed)
		a := sim.Run(t, openMem(cfg), cfg)
		b := sim.Run(t, openMem(cfg), cfg)
		if !bytes.Equal(a.HistoryJSONL, b.HistoryJSONL) {
			la, lb := bytes.Split(a.HistoryJSONL, []byte("\n")), bytes.Split(b.HistoryJSONL, []byte("\n"))
			for i := range min(len(la), len(lb)) {
				if !bytes.Equal(la[i], lb[i]) {
					t.Fatalf("seed %d: histories differ at line %d (%d vs %d lines):\n%s\n%s", seed, i, len(la), len(lb), la[i], lb[i])
				}
			}
			t.Fatalf("seed %d: lengths differ", seed)
		}
		t.Logf("seed %d: %s, %d bytes, %d faults", seed, a.Report.Verdict, len(a.HistoryJSONL), a.Faults)
	}
}

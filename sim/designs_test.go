package sim_test

import (
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/sim"
	"github.com/idembench/idembench/sim/simtest"
)

// TestKnownBadDesignsCaught: each design whose flaw only the simulation
// reaches (and retries-uncertain, which needs its uncertain outcomes) is
// caught by its invariant on at least 19 of 20 seeds (all of the fixed
// seeds of the quick form).
func TestKnownBadDesignsCaught(t *testing.T) {
	designs := []struct {
		store string
		want  checker.Invariant
	}{
		{"naive/skewed-leases", checker.T1LiveTakeover},
		{"naive/touch-on-read", checker.T2TakeoverLiveness},
		{"naive/lean-record", checker.I3ReplayConsistency},
		{"naive/retries-uncertain", checker.I9UncertainHeld},
	}
	n := simtest.SeedCount(*flagSeeds, 20, 2)
	for _, d := range designs {
		caught := 0
		var missed []int64
		for seed := int64(1); seed <= int64(n); seed++ {
			cfg := sim.Quick(seed)
			res := sim.Run(t, opener(t, d.store, cfg), cfg)
			if res.Report.Result(d.want).Violations > 0 {
				caught++
			} else {
				missed = append(missed, seed)
			}
		}
		t.Logf("%s caught by %s on %d/%d seeds (missed: %v)", d.store, d.want, caught, n, missed)
		if caught*20 < n*19 {
			t.Errorf("%s caught by %s on %d/%d seeds, want at least 95%%; missed seeds %v", d.store, d.want, caught, n, missed)
		}
	}
}

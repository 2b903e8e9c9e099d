package sim_test

import (
	"testing"

	"github.com/idembench/idembench/backends/naive"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim"
)

// openNaive opens a known-bad design of backends/naive for the simulation.
func openNaive(cfg sim.Config, design func(naive.Options) idem.Store) sim.Opener {
	return sim.Shared(func(clock idem.Clock) (idem.Store, error) {
		return design(naive.Options{Clock: clock, TakeoverGrace: cfg.TakeoverGrace}), nil
	})
}

func TestKnownBadDesignsCaught(t *testing.T) {
	designs := []struct {
		name string
		open func(naive.Options) idem.Store
		want checker.Invariant
	}{
		{"skewed-leases", func(o naive.Options) idem.Store { return naive.NewSkewedLeases(o) }, checker.T1LiveTakeover},
		{"touch-on-read", func(o naive.Options) idem.Store { return naive.NewTouchOnRead(o) }, checker.T2TakeoverLiveness},
	}
	for _, d := range designs {
		caught := 0
		for seed := int64(1); seed <= 20; seed++ {
			cfg := sim.Quick(seed)
			res := sim.Run(t, openNaive(cfg, d.open), cfg)
			if res.Report.Result(d.want).Violations > 0 {
				caught++
			}
		}
		t.Logf("%s caught by %s on %d/20 seeds", d.name, d.want, caught)
		if caught < 19 {
			t.Errorf("%s caught by %s on %d/20 seeds, want >= 19", d.name, d.want, caught)
		}
	}
}

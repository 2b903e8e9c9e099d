package sim_test

import (
	"testing"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim"
)

func openMem(cfg sim.Config) sim.Opener {
	return sim.Shared(func(clock idem.Clock) (idem.Store, error) {
		return memstore.New(memstore.Options{Clock: clock, SweepInterval: -1, TakeoverGrace: cfg.TakeoverGrace}), nil
	})
}

func TestQuickMemstore(t *testing.T) {
	cfg := sim.Quick(1)
	res := sim.Run(t, openMem(cfg), cfg)
	t.Logf("verdict %s calls %d effects %d faults %d steps %d virtual %s wall %s", res.Report.Verdict, res.Calls, res.Effects, res.Faults, res.Steps, res.Virtual, res.Wall)
	for _, v := range res.Report.Violations {
		t.Errorf("%s %s: %s", v.Invariant, v.Key, v.Message)
	}
}

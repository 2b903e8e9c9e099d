package consume

import (
	"testing"

	"github.com/idembench/idembench/workload"
)

// TestPlanTargets checks a plan's fault targets: distinct from each other
// and from the poison messages, the pause and overlap targets (and only
// they) marked for the fault's second copy, and every message named by the
// key the driver sends as its number.
func TestPlanTargets(t *testing.T) {
	for seed := range int64(20) {
		cfg := &Config{Messages: 30, Seed: seed, Poison: 2, Faults: Faults{CrashBeforeAck: 2, Pause: 1, Overlap: 3}}
		p := newPlan(cfg, "r")
		holds, pauses := p.hold.list(), p.pause.list()
		if len(holds) != 3 || len(pauses) != 1 || len(p.crash.list()) != 2 || len(p.poison) != 2 {
			t.Fatalf("seed %d: %d overlap, %d pause, %d crash targets and %d poison; want 3, 1, 2, 2",
				seed, len(holds), len(pauses), len(p.crash.list()), len(p.poison))
		}
		seen := map[string]bool{}
		for _, set := range [][]string{holds, pauses, p.crash.list()} {
			for _, k := range set {
				if seen[k] || p.poison[k] {
					t.Errorf("seed %d: %s is the target of two faults", seed, k)
				}
				seen[k] = true
			}
		}
		copies := p.copy.list()
		if len(copies) != 4 {
			t.Fatalf("seed %d: %d messages marked for a second copy, want the 4 pause and overlap targets", seed, len(copies))
		}
		for _, k := range copies {
			if !p.hold.has(k) && !p.pause.has(k) {
				t.Errorf("seed %d: %s gets a fault copy but is no pause or overlap target", seed, k)
			}
		}
		for i, m := range p.msgs {
			if want := workload.KeyOf("r", publishers, int64(i+1)); m.Key != want || p.byKey(want) != &p.msgs[i] {
				t.Fatalf("seed %d: message %d has key %q, want the driver's %q", seed, i, m.Key, want)
			}
		}
	}
}

package consume

import (
	"slices"
	"testing"
)

// TestPlanOverlapTargets checks the overlap targets of a plan: distinct
// from the other targets, each published exactly twice with its copy 0
// or 1 positions later, and no other message published twice when the
// duplicate rate is zero (pause targets have their own copy).
func TestPlanOverlapTargets(t *testing.T) {
	for seed := range int64(20) {
		cfg := &Config{Messages: 30, Seed: seed, DuplicateRate: 0, Poison: 2, Faults: Faults{CrashBeforeAck: 2, Pause: 1, Overlap: 3}}
		p := newPlan(cfg, "r")
		holds := p.hold.list()
		if len(holds) != 3 {
			t.Fatalf("seed %d: %d overlap targets, want 3", seed, len(holds))
		}
		for _, k := range holds {
			if p.poison[k] || p.crash.has(k) || p.pause.has(k) {
				t.Errorf("seed %d: overlap target %s is also another fault's target", seed, k)
			}
		}
		at := map[int][]int{}
		for pos, i := range p.order {
			at[i] = append(at[i], pos)
		}
		for i, m := range p.msgs {
			want := 1
			if slices.Contains(holds, m.Key) || p.pause.has(m.Key) {
				want = 2
			}
			if len(at[i]) != want {
				t.Errorf("seed %d: %s published %d times, want %d", seed, m.Key, len(at[i]), want)
				continue
			}
			if slices.Contains(holds, m.Key) {
				// Between the two copies: at most the messages first
				// published in between (0 or 1) and other duplicates.
				between := 0
				for _, j := range p.order[at[i][0]+1 : at[i][1]] {
					if at[j][0] > at[i][0] {
						between++
					}
				}
				if between > 1 {
					t.Errorf("seed %d: the copy of %s is %d new messages later, want 0 or 1", seed, m.Key, between)
				}
			}
		}
	}
}

package naive_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
)

// takeoverSeeds is how many seeds TestTakeoverRaceCatchesTwoStepTakeover
// runs the built-in takeover-race scenario on, at its full length. Zero
// (the default) runs the quick form: two seeds of a 1.5 s run.
// The acceptance figure is 20:
//
//	go test ./backends/naive -run TestTakeoverRaceCatchesTwoStepTakeover -count=1 -v -args -takeover-seeds=20
var takeoverSeeds = flag.Int("takeover-seeds", 0, "seeds of the full takeover-race scenario (0: a quick form)")

// TestTakeoverRaceCatchesTwoStepTakeover runs the built-in takeover-race
// scenario, with the default fenced sink and recovery, against
// naive/two-step-takeover (a take-over that reads, then writes) and
// against the reference engine, seed by seed, and prints how many seeds
// each was caught on. The known-bad store must be caught on all but at
// most one seed in twenty; the reference engine on none.
func TestTakeoverRaceCatchesTwoStepTakeover(t *testing.T) {
	seeds, duration := *takeoverSeeds, time.Duration(0)
	if seeds <= 0 {
		seeds, duration = 2, 1500*time.Millisecond
	}
	reg, err := harness.NewRegistry(engines.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	caught := func(name string) (n int) {
		eng, err := reg.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(1); seed <= int64(seeds); seed++ {
			o, err := harness.Run(context.Background(), harness.Spec{Engine: eng, ScenarioName: "takeover-race",
				Overrides: harness.Overrides{Seed: seed, Duration: duration}})
			if err != nil {
				t.Fatalf("%s seed %d: %v", name, seed, err)
			}
			if o.Report.Verdict == checker.VerdictViolation {
				n++
				t.Logf("%s seed %d: caught: %v", name, seed, o.Report.Violated())
			}
		}
		return n
	}
	bad := caught(engines.NaivePrefix + "two-step-takeover")
	good := caught(harness.ReferenceEngine)
	t.Logf("takeover-race: naive/two-step-takeover caught on %d of %d seeds; the reference engine on %d of %d", bad, seeds, good, seeds)
	if miss := seeds - bad; miss > seeds/20 {
		t.Errorf("two-step-takeover escaped takeover-race on %d of %d seeds (at most %d allowed)", miss, seeds, seeds/20)
	}
	if good != 0 {
		t.Errorf("the reference engine failed takeover-race on %d of %d seeds", good, seeds)
	}
}

package sweep_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/sweep"
)

// TestSpecLimits: Run refuses a spec past Validate's limits before any
// step runs, with an error wrapping harness.ErrConfig that names the
// field; NaN and infinities are refused too (they used to run, and failed
// only when the result was written as JSON).
func TestSpecLimits(t *testing.T) {
	target := []sweep.Target{{Label: "memory", Spec: harness.Spec{Engine: engine(t, "idem")}}}
	cases := []struct {
		name string
		edit func(*sweep.Spec)
		want string
	}{
		{"no target", func(sp *sweep.Spec) { sp.Targets = nil }, "no target"},
		{"Hi NaN", func(sp *sweep.Spec) { sp.Hi = math.NaN() }, "Hi NaN"},
		{"Lo +Inf", func(sp *sweep.Spec) { sp.Lo = math.Inf(1) }, "Lo +Inf"},
		{"Hi below Lo", func(sp *sweep.Spec) { sp.Lo, sp.Hi = 0.5, 0.4 }, "0 < Lo < Hi"},
		{"Hi above MaxHi", func(sp *sweep.Spec) { sp.Hi = 11 }, "Hi <= 10"},
		{"Steps", func(sp *sweep.Spec) { sp.Steps = sweep.MaxSteps + 1 }, "Steps 51"},
		{"Step", func(sp *sweep.Spec) { sp.Step = 10 * time.Millisecond }, "Step 10ms"},
		{"SLOP99", func(sp *sweep.Spec) { sp.SLOP99 = 2 * time.Hour }, "SLOP99"},
		{"MaxErrorRate", func(sp *sweep.Spec) { sp.MaxErrorRate = math.NaN() }, "MaxErrorRate"},
		{"Seed", func(sp *sweep.Spec) { sp.Seed = -1 }, "Seed"},
		{"labels", func(sp *sweep.Spec) { sp.Targets = append(sp.Targets, sp.Targets[0]) }, "two targets labelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := 0
			sp := sweep.Spec{Targets: target, Progress: func(string, sweep.Step) { steps++ }}
			c.edit(&sp)
			_, err := sweep.Run(context.Background(), sp)
			if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Run: %v; want a configuration error naming %q", err, c.want)
			}
			if steps != 0 {
				t.Errorf("%d steps ran", steps)
			}
		})
	}
}

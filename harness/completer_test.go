package harness_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
)

// TestCompleterScenario: in abandoned-keys, whose clients never retry,
// the reference completers leave no key stuck and no effect doubled; the
// known-bad completer (naive/unfenced-completer) is caught by I1; and
// completers that do nothing leave the abandoned keys in progress, which
// I6 reports although no client retried them.
func TestCompleterScenario(t *testing.T) {
	idle := engine(t, harness.ReferenceEngine)
	idle.Name = "idle-completer"
	// It looks at the stuck keys every pass and leaves them: the probe
	// sees its passes (so it does not wait MaxCompleterPassWait for one)
	// and judges the keys it left.
	idle.Completer = func(ctx context.Context, st idem.Store, look func(string) (idem.Response, bool)) error {
		_, err := st.(idem.Lister).ListStuck(ctx, 0, 0)
		return err
	}
	n := 2
	if testing.Short() {
		n = 1
	}
	cases := []struct {
		engine harness.StoreFactory
		want   checker.Verdict
		inv    checker.Invariant
	}{
		{engine(t, harness.ReferenceEngine), checker.VerdictOK, ""},
		{engine(t, "naive/unfenced-completer"), checker.VerdictViolation, checker.I1AtMostOnce},
		{idle, checker.VerdictViolation, checker.I6Liveness},
	}
	for _, c := range cases {
		t.Run(c.engine.Name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range seeds(n) {
				o, err := harness.Run(context.Background(), harness.Spec{
					Engine: c.engine, ScenarioName: "abandoned-keys",
					Overrides: harness.Overrides{Seed: seed, Duration: 1500 * time.Millisecond}, CheckTimeout: time.Minute,
				})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if o.Verdict() != c.want {
					t.Fatalf("seed %d: verdict %s, want %s (violated %v)\nreplay: %s", seed, o.Verdict(), c.want, o.Report.Violated(), o.Replay)
				}
				if c.inv != "" && !slices.Contains(o.Report.Violated(), c.inv) {
					t.Fatalf("seed %d: violated %v, want %s", seed, o.Report.Violated(), c.inv)
				}
				if o.Report.Stats.Probes == 0 {
					t.Fatalf("seed %d: no probes: I6 unchecked", seed)
				}
			}
		})
	}
}

// TestCompleterNeedsRecovery: the reference completer without the
// recovery hook is a configuration error, not a run.
func TestCompleterNeedsRecovery(t *testing.T) {
	_, err := harness.Run(context.Background(), harness.Spec{
		Engine: engine(t, harness.ReferenceEngine), ScenarioName: "abandoned-keys", NoRecovery: true,
		Overrides: harness.Overrides{Seed: 1, Duration: 100 * time.Millisecond},
	})
	if !errorsIsConfig(err) {
		t.Fatalf("err = %v, want a configuration error", err)
	}
}

func errorsIsConfig(err error) bool { return err != nil && errors.Is(err, harness.ErrConfig) }

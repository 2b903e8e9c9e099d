package sweep_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	_ "github.com/idembench/idembench/reports/plots" // the sweep writes the knee plot
	"github.com/idembench/idembench/sweep"
)

func TestRatesAreGeometric(t *testing.T) {
	r := sweep.Rates(1000, 0.1, 1.6, 5)
	want := []float64{100, 200, 400, 800, 1600}
	for i := range want {
		if math.Abs(r[i]-want[i]) > 0.5 {
			t.Fatalf("Rates = %v, want %v", r, want)
		}
	}
	if got := sweep.Rates(1000, 0.5, 2, 1); len(got) != 1 || got[0] != 500 {
		t.Fatalf("one step: %v", got)
	}
}

func engine(t *testing.T, name string) harness.StoreFactory {
	t.Helper()
	reg, err := harness.NewRegistry(engines.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := reg.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSweepMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five short harness runs")
	}
	var seen int
	res, err := sweep.Run(context.Background(), sweep.Spec{
		Targets: []sweep.Target{{Label: "memory", Spec: harness.Spec{Engine: engine(t, "idem")}}},
		Step:    700 * time.Millisecond, Steps: 3, Lo: 0.1, Hi: 1.5, Seed: 5,
		// An objective a loaded CI machine meets at light load (measured:
		// a scheduling stall put one light step's p99 at 118 ms); the
		// test checks the bookkeeping, not the machine's latency.
		SLOP99:   time.Second,
		Progress: func(string, sweep.Step) { seen++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Curves[0]
	if seen != 4 || len(c.Steps) != 3 || c.ClosedLoop.Achieved <= 0 {
		t.Fatalf("%d progress calls, curve %+v", seen, c)
	}
	if res.Violations() != 0 {
		t.Fatalf("the reference engine has %d violating steps", res.Violations())
	}
	if c.Steps[0].Offered >= c.Steps[2].Offered || !c.Steps[0].Sustainable || c.MaxSustainable <= 0 {
		t.Fatalf("steps %+v: want rising offered load, the lightest within the objective", c.Steps)
	}
	dir := t.TempDir()
	if _, err := sweep.Write(dir, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{sweep.JSONFile, "capacity.md", "knee.png", "knee.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// TestSweepShowsAnUnsafeEngine: every step is checked, so a known-bad
// design's steps carry its violations.
func TestSweepShowsAnUnsafeEngine(t *testing.T) {
	res, err := sweep.Run(context.Background(), sweep.Spec{
		Targets: []sweep.Target{{Label: "check-then-act", Spec: harness.Spec{Engine: engine(t, "naive/check-then-act"), ScenarioName: "duplicates"}}},
		Step:    700 * time.Millisecond, Steps: 1, Lo: 0.5, Hi: 1, Seed: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violations() == 0 {
		t.Fatalf("no step of naive/check-then-act found a violation: %+v", res.Curves)
	}
}

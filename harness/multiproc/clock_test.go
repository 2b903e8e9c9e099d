package multiproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
)

// TestMeasureClock: over a connection whose other end answers with a
// clock 50 ms ahead, the measured offset is that, to within the bound the
// measurement gives, and the bound is half a round trip (small here).
func TestMeasureClock(t *testing.T) {
	co, wo := connPair(t)
	const ahead = int64(50 * time.Millisecond)
	go co.Serve(context.Background(), func(_ context.Context, _ string, body any, _ bool) (any, error) {
		return ClockSample{Now: time.Now().UnixNano() + ahead}, nil
	})
	go wo.Serve(context.Background(), nil)
	r, err := measureClock(context.Background(), wo, func() int64 { return time.Now().UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	if r.Bound <= 0 || r.Bound > 50*time.Millisecond {
		t.Fatalf("bound %s, want half a round trip on a pipe", r.Bound)
	}
	if d := r.Offset - time.Duration(ahead); d < -r.Bound || d > r.Bound {
		t.Fatalf("offset %s, want 50ms ± %s", r.Offset, r.Bound)
	}
}

// TestSkewedWorkerClocks runs four worker processes whose clocks are off
// by -50, +50, -20 and +20 ms, as four hosts' clocks would be, on Redis
// and PostgreSQL. Each measures its offset to the coordinator and
// corrects its readings; the header keeps each worker's bound, and the
// correct engine passes.
func TestSkewedWorkerClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for several seconds")
	}
	skews := []time.Duration{-50 * time.Millisecond, 50 * time.Millisecond, -20 * time.Millisecond, 20 * time.Millisecond}
	opts := Options{
		Command: func() (*exec.Cmd, error) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), childEnv+"=worker")
			return cmd, nil
		},
		ClockSkew: func(i int) time.Duration { return skews[i] },
	}
	sc, err := scenarios.Load("duplicates")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		backend harness.Backend
		url     func(testing.TB) string
	}{{harness.Redis, testenv.RedisURL}, {harness.Postgres, testenv.PostgresURL}} {
		t.Run(string(b.backend), func(t *testing.T) {
			sp := harness.Spec{Engine: engines.Reference(), Backend: b.backend, URL: b.url(t), ScenarioName: sc.Name, Scenario: sc,
				Sink: "fenced", Overrides: harness.Overrides{Seed: 3, Duration: 1500 * time.Millisecond}}
			out, err := Run(context.Background(), sp, 4, opts)
			if err != nil {
				t.Fatal(err)
			}
			if out.Report.Verdict != checker.VerdictOK {
				t.Fatalf("verdict %s: %v", out.Report.Verdict, out.Report.Violations)
			}
			clocks := out.History.Header.Clocks
			if len(clocks) != 4 {
				t.Fatalf("%d clock bounds in the header, want one per worker: %+v", len(clocks), clocks)
			}
			for _, c := range clocks {
				// The offset undoes the worker's skew, to within the bound.
				if d := c.Offset + skews[c.Worker]; d < -c.Bound || d > c.Bound || c.Bound > 20*time.Millisecond {
					t.Errorf("worker %d skewed %s: offset %s, bound %s", c.Worker, skews[c.Worker], c.Offset, c.Bound)
				}
			}
			t.Log(fmt.Sprintf("clock bounds: %+v", clocks))
		})
	}
}

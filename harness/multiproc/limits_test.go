package multiproc

import (
	"context"
	"errors"
	"math"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// TestWorkerLimits: more workers than MaxWorkers, or than the run has
// clients, is a configuration error before any worker process starts.
func TestWorkerLimits(t *testing.T) {
	url := testenv.RedisURL(t)
	var started atomic.Int32
	opts := Options{Command: func() (*exec.Cmd, error) {
		started.Add(1)
		return exec.Command("true"), nil
	}}
	clients := 3
	cases := []struct {
		name    string
		workers int
		want    string
	}{
		{"above MaxWorkers", MaxWorkers + 1, "above the limit of 64"},
		{"far above MaxWorkers", 100000, "above the limit of 64"},
		{"more workers than clients", clients + 1, "each worker runs at least one client"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			started.Store(0)
			sp := harness.Spec{Engine: engines.Reference(), Backend: harness.Redis, URL: url, ScenarioName: "duplicates",
				Overrides: harness.Overrides{Seed: 1, Clients: clients, Duration: 300 * time.Millisecond}}
			_, err := Run(context.Background(), sp, c.workers, opts)
			if !errors.Is(err, harness.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Run with %d workers: %v; want a configuration error saying %q", c.workers, err, c.want)
			}
			if n := started.Load(); n != 0 {
				t.Errorf("%d worker processes started; want none", n)
			}
		})
	}
}

// TestClientShares: the workers' clients add up to the run's exactly,
// each worker runs at least one, and no two differ by more than one.
func TestClientShares(t *testing.T) {
	cases := []struct {
		clients, n int
		want       []int
	}{
		{1, 1, []int{1}},
		{10, 3, []int{4, 3, 3}},
		{40, 40, nil},
		{10000, 64, nil},
	}
	for _, c := range cases {
		got := clientShares(c.clients, c.n)
		sum, lo, hi := 0, got[0], got[0]
		for _, s := range got {
			sum, lo, hi = sum+s, min(lo, s), max(hi, s)
		}
		if len(got) != c.n || sum != c.clients || lo < 1 || hi-lo > 1 {
			t.Errorf("clientShares(%d, %d) = %v: %d shares summing to %d", c.clients, c.n, got, len(got), sum)
		}
		if c.want != nil {
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("clientShares(%d, %d) (-want +got):\n%s", c.clients, c.n, d)
			}
		}
	}
}

// TestWorkersRunTheRunsClients: the worker specs of a run add up to its
// clients and its open-loop rate, however they divide among the workers.
func TestWorkersRunTheRunsClients(t *testing.T) {
	sc, err := scenarios.Load("duplicates")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		clients, workers int
		rate             float64
	}{{10, 4, 0}, {40, 40, 400}, {5, 3, 90}, {workload.MaxClients, MaxWorkers, 1000}} {
		p := &harness.Prepared{Spec: harness.Spec{Engine: engines.Reference(), Backend: harness.Redis, Scenario: sc,
			ScenarioName: sc.Name, Overrides: harness.Overrides{Seed: 1}}}
		cfg := harness.WorkloadConfig(sc, harness.Overrides{Seed: 1, Clients: c.clients, Rate: c.rate})
		co := newCoordinator(p, cfg, c.workers, Options{})
		co.t0 = time.Now()
		clients, rate := 0, 0.0
		for i := range c.workers {
			ws := co.next(i, time.Second)
			if ws.Over.Clients < 1 {
				t.Errorf("%d clients on %d workers: worker %d runs %d clients", c.clients, c.workers, i, ws.Over.Clients)
			}
			clients += ws.Over.Clients
			rate += ws.Over.Rate
		}
		if clients != c.clients || math.Abs(rate-c.rate) > 1e-6 {
			t.Errorf("%d clients at %g/s on %d workers: the workers run %d clients at %g/s", c.clients, c.rate, c.workers, clients, rate)
		}
	}
}

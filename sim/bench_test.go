package sim_test

import (
	"context"
	"flag"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/sim"
)

var flagProduction = flag.Bool("sim.production", false, "run TestProductionFigures (about a minute)")

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProductionFigures is the simulation's benchmark; it is a test
// because a synctest bubble needs a *testing.T. It simulates the production-timings scenario (24 h of
// traffic from 1,000 clients on 10 app servers, 30 s leases, 24 h
// retention, 1 h take-over grace, the completer every minute) and then
// runs the real-time harness (idembench run, scenario default, memory
// store) for 5 s on the same machine, and prints for each its wall time,
// CPU time, fault events and fault events per CPU-second. It asserts no
// speed, only that the simulated day passes the check:
//
//	go test ./sim -count=1 -v -run TestProductionFigures -sim.production
func TestProductionFigures(t *testing.T) {
	if !*flagProduction {
		t.Skip("the production figures take about a minute: -sim.production runs them")
	}
	b := t
	{
		cfg := sim.Production(1)
		cfg.NoJSONL = true
		cpu0 := cpuTime(b)
		res := sim.Run(t, opener(t, "memory", cfg), cfg)
		simCPU := cpuTime(b) - cpu0
		b.Logf("sim production: %s simulated in %s wall (%s CPU, check included): %d calls, %d effects, %d fault events, %d steps; verdict %s",
			res.Virtual.Round(time.Second), res.Wall.Round(time.Millisecond), simCPU.Round(time.Millisecond), res.Calls, res.Effects, res.Faults, res.Steps, res.Report.Verdict)
		if res.Report.Verdict != checker.VerdictOK {
			b.Errorf("production simulation: verdict %s: %v", res.Report.Verdict, res.Report.Violations[:min(3, len(res.Report.Violations))])
		}
		simRate := float64(res.Faults) / simCPU.Seconds()

		cpu0 = cpuTime(b)
		wall := time.Now()
		o, err := harness.Run(context.Background(), harness.Spec{
			Engine: harness.StoreFactory{Name: "memory", Open: func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
				st := memstore.New(memstore.Options{Clock: env.Clock})
				return st, st, nil
			}},
			ScenarioName: "default", Overrides: harness.Overrides{Seed: 1, Duration: 5 * time.Second},
		})
		if err != nil {
			b.Fatal(err)
		}
		rtCPU := cpuTime(b) - cpu0
		rtFaults := o.Report.Stats.Faults
		rtRate := float64(rtFaults) / rtCPU.Seconds()
		b.Logf("real-time harness (run, scenario default, 5 s): %s wall, %s CPU, %d calls, %d fault events; verdict %s",
			time.Since(wall).Round(time.Millisecond), rtCPU.Round(time.Millisecond), o.Report.Stats.Calls, rtFaults, o.Report.Verdict)
		b.Logf("fault events per CPU-second: simulation %.0f, real-time harness %.1f: %.0fx", simRate, rtRate, simRate/rtRate)
	}
}

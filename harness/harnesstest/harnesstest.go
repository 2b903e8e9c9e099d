// Package harnesstest runs the whole harness against a store from a Go
// test: every built-in scenario, a few seeds, the safe configuration
// (fenced sink, recovery), and a failure that carries the checker's
// violation report and the command that replays the run.
//
//	func TestMyStoreUnderTheHarness(t *testing.T) {
//		harnesstest.Run(t, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
//			return mystore.New(), nil, nil
//		})
//	}
//
// It is bounded: about 60 s by default (two seeds) and 15 s under -short
// (one seed, without the fault-free "throughput" scenario), whatever the
// machine; runs that would not fit in what is left of the budget are
// skipped and named in the log.
package harnesstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/scenarios"
)

// Budgets and per-run traffic.
const (
	budget      = 60 * time.Second
	shortBudget = 15 * time.Second
)

// config is what the options change.
type config struct {
	engine    harness.StoreFactory
	backend   harness.Backend
	url       string
	seeds     []int64
	scenarios []string
	duration  time.Duration
	budget    time.Duration
}

// Option changes what Run runs.
type Option func(*config)

// OnBackend runs the store on backend b at url (the factory gets them in
// harness.Env); the default is harness.Memory.
func OnBackend(b harness.Backend, url string) Option {
	return func(c *config) { c.backend, c.url = b, url }
}

// Seeds replaces the seeds (default: two, one under -short).
func Seeds(seeds ...int64) Option {
	return func(c *config) { c.seeds = seeds }
}

// Scenarios replaces the scenarios (default: every built-in one; under
// -short all but "throughput", which has no faults and whose 10 s lease
// makes its end-of-run liveness probe alone take most of the budget).
func Scenarios(names ...string) Option {
	return func(c *config) { c.scenarios = names }
}

// Persistent says the store keeps its records across runs (a store on its
// own server): every run gets a per-run key prefix (harness.StoreFactory.Persistent).
func Persistent() Option {
	return func(c *config) { c.engine.Persistent = true }
}

// Named names the engine in the report (default: "store under test").
func Named(name string) Option {
	return func(c *config) { c.engine.Name = name }
}

// Run runs every built-in scenario against the store open returns, on a
// few seeds, through harness.Run with the safe configuration, and reports
// each run that does not pass with t.Errorf: its verdict, the violations
// and the replay command. A run that cannot start (a configuration the
// store does not support, a backend that does not answer) is an error too.
func Run(t testing.TB, open harness.StoreFunc, opts ...Option) {
	t.Helper()
	RunEngine(t, harness.StoreFactory{Name: "store under test", Open: open}, opts...)
}

// RunEngine is Run for a registered engine.
func RunEngine(t testing.TB, e harness.StoreFactory, opts ...Option) {
	t.Helper()
	c := &config{engine: e, backend: harness.Memory, seeds: []int64{1, 2}, scenarios: scenarios.Names(),
		duration: 800 * time.Millisecond, budget: budget}
	if testing.Short() {
		c.seeds, c.duration, c.budget = []int64{1}, 600*time.Millisecond, shortBudget
		c.scenarios = slices.DeleteFunc(c.scenarios, func(n string) bool { return n == "throughput" })
	}
	for _, o := range opts {
		o(c)
	}
	deadline := time.Now().Add(c.budget)
	var skipped []string
	for _, seed := range c.seeds {
		for _, name := range c.scenarios {
			label := fmt.Sprintf("%s seed %d", name, seed)
			// A run takes its traffic, a drain and a liveness probe (a few
			// lease TTLs of the short scenarios) and the check: reserve
			// four times the traffic.
			if time.Until(deadline) < 4*c.duration {
				skipped = append(skipped, label)
				continue
			}
			if !c.run(t, deadline, name, seed, label) {
				skipped = append(skipped, label)
			}
		}
	}
	if len(skipped) > 0 {
		t.Logf("harnesstest: budget of %s spent; not run: %s", c.budget, strings.Join(skipped, ", "))
	}
}

// run runs one scenario and seed and reports a run that does not pass. It
// returns false when the budget ran out before the run ended.
func (c *config) run(t testing.TB, deadline time.Time, name string, seed int64, label string) bool {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	o, err := harness.Run(ctx, harness.Spec{
		Engine: c.engine, Backend: c.backend, URL: c.url, ScenarioName: name,
		Overrides: harness.Overrides{Seed: seed, Duration: c.duration}, CheckTimeout: 10 * time.Second,
		Tool: "harnesstest",
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil:
		t.Errorf("harnesstest: %s: %s: %v", c.engine.Name, label, err)
	case o.Report.Verdict != checker.VerdictOK:
		t.Errorf("harnesstest: %s: %s: %s", c.engine.Name, label, report(o))
	default:
		t.Logf("harnesstest: %s: %s: ok in %s", c.engine.Name, label, time.Since(start).Round(10*time.Millisecond))
	}
	return true
}

// report describes a run that did not pass.
func report(o *harness.Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s, violated %v\n", o.Report.Verdict, o.Report.Violated())
	for i, v := range o.Report.Violations {
		if i == 5 {
			fmt.Fprintf(&b, "  … %d more\n", len(o.Report.Violations)-i)
			break
		}
		fmt.Fprintf(&b, "  %s key %s: %s\n", v.Invariant, v.Key, v.Message)
	}
	fmt.Fprintf(&b, "  replay: %s", o.Replay)
	return b.String()
}

// Package harnesstest runs the whole harness against a store from a Go
// test: every built-in scenario, a few seeds, the safe configuration
// (fenced sink, recovery), and a failure that carries the checker's
// violation report and the go test command that replays the run (the
// store exists only in the test, so no idembench binary can).
//
//	func TestMyStoreUnderTheHarness(t *testing.T) {
//		harnesstest.Run(t, func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
//			return mystore.New(), nil, nil
//		})
//	}
//
// It is bounded: about 60 s by default (two seeds) and 15 s under -short
// (one seed, without the fault-free "throughput" scenario), whatever the
// machine; runs go seed by seed (every scenario once before any twice),
// and those that would not fit in what is left of the budget are skipped
// and named in one log line. Scenarios that need a capability the store
// lacks (abandoned-keys needs idem.Lister) are skipped and logged.
package harnesstest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
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
// and the go test command that replays it. A run that cannot start (a configuration the
// store does not support, a backend that does not answer) is an error too.
func Run(t testing.TB, open harness.StoreFunc, opts ...Option) {
	t.Helper()
	RunEngine(t, harness.StoreFactory{Name: "store under test", Open: open}, opts...)
}

// RunEngine is Run for a registered engine.
//
// Runs go seed by seed: every scenario gets the first seed before any gets
// the second, and the second round starts halfway down the list, so that a
// budget too small for every run drops different scenarios' second seeds
// rather than always the last ones'. What the budget dropped is logged.
// On a *testing.T each run is a subtest named seed<N>/<scenario>, which
// the replay line of a failure selects with go test -run.
//
// A scenario that needs a capability the store lacks is skipped and logged,
// not failed: abandoned-keys runs completers, which need idem.Lister.
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
	names := c.supported(t)
	deadline := time.Now().Add(c.budget)
	var skipped []string
	total := 0
	for _, round := range plan(c.seeds, names) {
		total += len(round)
		skipped = append(skipped, c.round(t, deadline, round)...)
	}
	if len(skipped) > 0 {
		t.Logf("harnesstest: budget of %s spent: %d of %d runs not made: %s (more time: harnesstest.Budget)",
			c.budget, len(skipped), total, strings.Join(skipped, ", "))
	}
}

// Budget replaces the time budget of all the runs (default 60 s, 15 s
// under -short). Runs that would not fit in what is left are not made,
// and the log names them.
func Budget(d time.Duration) Option {
	return func(c *config) { c.budget = d }
}

// planned is one run of the plan.
type planned struct {
	seed     int64
	scenario string
}

func (r planned) label() string { return fmt.Sprintf("%s seed %d", r.scenario, r.seed) }

// plan orders the runs seed-major, one round per seed: every scenario with
// the first seed, then every scenario with the second, and so on. Round k
// starts k/len of the way down the list (a rotation), so that when the
// budget cuts the last round short, the scenarios that lose a seed are not
// always the same ones at the end of the alphabet.
func plan(seeds []int64, names []string) [][]planned {
	var out [][]planned
	for k, seed := range seeds {
		round := make([]planned, 0, len(names))
		off := 0
		if len(names) > 0 {
			off = k * len(names) / len(seeds) % len(names)
		}
		for i := range names {
			round = append(round, planned{seed: seed, scenario: names[(off+i)%len(names)]})
		}
		out = append(out, round)
	}
	return out
}

// supported returns the scenarios of c the store can run, and logs the
// others with the capability they need. It opens the store once to ask
// what it implements; a store that does not open is left to the runs,
// which report the error.
func (c *config) supported(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := harness.Env{Backend: c.backend, URL: c.url, Warn: func(string) {}}
	if c.backend.Persistent() || c.engine.Persistent {
		env.Prefix = "harnesstest-probe-"
	}
	st, closer, err := c.engine.Open(ctx, env)
	if err != nil {
		return c.scenarios
	}
	if closer != nil {
		defer closer.Close()
	}
	var names []string
	for _, name := range c.scenarios {
		if need := missingCapability(st, name); need != "" {
			t.Logf("harnesstest: %s: scenario %s skipped: %s", c.engine.Name, name, need)
			continue
		}
		names = append(names, name)
	}
	return names
}

// missingCapability says what the scenario called name needs that st
// lacks, or "". A scenario that does not load is left to the run.
func missingCapability(st idem.Store, name string) string {
	sc, err := scenarios.Load(name)
	if err != nil {
		return ""
	}
	if harness.WorkloadConfig(sc, harness.Overrides{}).Completer.Count > 0 {
		if _, ok := st.(idem.Lister); !ok {
			return "it runs completers, which list stuck keys, and the store does not implement idem.Lister"
		}
	}
	return ""
}

// round makes the runs of one seed, as subtests seed<N>/<scenario> when t
// is a *testing.T, and returns the labels of those the budget did not
// leave time for.
func (c *config) round(t testing.TB, deadline time.Time, runs []planned) (skipped []string) {
	t.Helper()
	if len(runs) == 0 {
		return nil
	}
	// A run takes its traffic, a drain and a liveness probe (a few lease
	// TTLs of the short scenarios) and the check: reserve four times the
	// traffic.
	fits := func() bool { return time.Until(deadline) >= 4*c.duration }
	tt, ok := t.(*testing.T)
	if !ok {
		for _, r := range runs {
			if !fits() || !c.run(t, deadline, r) {
				skipped = append(skipped, r.label())
			}
		}
		return skipped
	}
	tt.Run(fmt.Sprintf("seed%d", runs[0].seed), func(t *testing.T) {
		for _, r := range runs {
			if !fits() {
				skipped = append(skipped, r.label())
				continue
			}
			t.Run(r.scenario, func(t *testing.T) {
				if !c.run(t, deadline, r) {
					skipped = append(skipped, r.label())
					t.Skipf("harnesstest: budget of %s spent before %s ended", c.budget, r.label())
				}
			})
		}
	})
	return skipped
}

// run runs one scenario and seed and reports a run that does not pass. It
// returns false when the budget ran out before the run ended.
func (c *config) run(t testing.TB, deadline time.Time, r planned) bool {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	o, err := harness.Run(ctx, harness.Spec{
		Engine: c.engine, Backend: c.backend, URL: c.url, ScenarioName: r.scenario,
		Overrides: harness.Overrides{Seed: r.seed, Duration: c.duration}, CheckTimeout: 10 * time.Second,
		Tool: "harnesstest",
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil:
		t.Errorf("harnesstest: %s: %s: %v", c.engine.Name, r.label(), err)
	case o.Report.Verdict != checker.VerdictOK:
		t.Errorf("harnesstest: %s: %s: %s", c.engine.Name, r.label(), report(o, replayLine(t.Name(), r)))
	default:
		t.Logf("harnesstest: %s: %s: ok in %s", c.engine.Name, r.label(), time.Since(start).Round(10*time.Millisecond))
	}
	return true
}

// replayLine returns the go test command that runs r again: the test
// called name (a subtest seed<N>/<scenario> of it when name ends so),
// from this package's directory, the current directory of a test binary.
// The engine under test exists only in the test, so no idembench binary
// can replay it.
func replayLine(name string, r planned) string {
	parts := strings.Split(name, "/")
	sub := []string{fmt.Sprintf("seed%d", r.seed), r.scenario}
	alone := ""
	if len(parts) < 3 || !slices.Equal(parts[len(parts)-2:], sub) {
		// Not a subtest of its own (a testing.TB that is not a *testing.T):
		// the whole test replays, and options narrow it to this run.
		alone = fmt.Sprintf(" (with harnesstest.Scenarios(%q), harnesstest.Seeds(%d) to make this run alone)", r.scenario, r.seed)
	}
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	dir, err := os.Getwd()
	cd := ""
	if err == nil {
		cd = "cd " + harness.ShellQuote(dir) + " && "
	}
	return cd + "go test -count=1 -run " + harness.ShellQuote(strings.Join(parts, "/")) + " ." + alone
}

// report describes a run that did not pass; replay is the command that
// repeats it.
func report(o *harness.Outcome, replay string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s, violated %v\n", o.Report.Verdict, o.Report.Violated())
	for i, v := range o.Report.Violations {
		if i == 5 {
			fmt.Fprintf(&b, "  … %d more\n", len(o.Report.Violations)-i)
			break
		}
		fmt.Fprintf(&b, "  %s key %s: %s\n", v.Invariant, v.Key, v.Message)
	}
	fmt.Fprintf(&b, "  replay: %s\n", replay)
	fmt.Fprintf(&b, "  seed %d, scenario %s, backend %s, %s of traffic, %d clients", o.Seed, o.History.Header.Scenario, o.History.Header.Backend, o.Duration, o.Clients)
	return b.String()
}

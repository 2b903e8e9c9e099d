package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// compareCmd is `idembench compare`.
type compareCmd struct {
	Dirs           []string      `arg:"" optional:"" help:"Saved run directories to compare instead of running (each holding summary.json or history.jsonl)." placeholder:"RUN-DIR"`
	Backends       []string      `help:"Store backends to run, in order: memory, redis, postgres." default:"memory" sep:","`
	Sinks          []string      `help:"Effect sinks to run: plain, fenced, tx." default:"fenced" sep:","`
	Engines        []string      `help:"Engines to run: idem or a known-bad design (${naive}); known-bad designs run on the memory backend only." default:"idem" sep:","`
	Scenario       string        `help:"Built-in scenario name or path to a scenario YAML file (built-in: ${scenarios})." default:"default" placeholder:"NAME|FILE"`
	Recovery       bool          `help:"Install the engine's recovery hook in every run." default:"true" negatable:""`
	Duration       time.Duration `help:"Length of each run's traffic phase (default: the scenario's)."`
	Clients        int           `help:"Concurrent clients per run (default: the scenario's)."`
	Rate           float64       `help:"Open loop at this many requests per second; 0 is closed loop (default: the scenario's)." default:"-1"`
	Seed           int64         `help:"Seed of every run (the same for all, so they see the same workload and faults); 0 picks one (printed)."`
	Out            string        `help:"Directory for compare.md, the overlaid plots and one run directory per configuration (default: ./idembench-out/compare-<timestamp>)." placeholder:"DIR"`
	RedisURL       string        `help:"Redis URL (default: $IDEM_REDIS_URL, else redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL    string        `help:"PostgreSQL URL (default: $IDEM_POSTGRES_URL, else postgres://postgres:postgres@127.0.0.1:5432/test)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	CheckTimeout   time.Duration `help:"Budget of each run's linearizability check." default:"30s"`
	thresholdFlags               // applied to every run
}

// compareConfig is one configuration of a comparison.
type compareConfig struct {
	Backend, Sink, Engine string
}

// compareResult is one configuration's outcome: a run, or why there is none.
type compareResult struct {
	Label string
	Dir   string
	Run   *reports.Run // nil when the run did not happen
	Code  int          // the run's exit code
	Err   error        // why the run failed or was skipped
}

func (c *compareCmd) Run(ctx context.Context, std stdio, g *globals) error {
	// stdout holds the table (or its JSON) alone; what happens on the way
	// goes to stderr.
	text := std.err
	var results []compareResult
	var out string
	var err error
	if len(c.Dirs) > 0 {
		results, out, err = c.load()
	} else {
		results, out, err = c.runAll(ctx, std, text, g)
	}
	if err != nil {
		return err
	}
	var runs []reports.Run
	for _, r := range results {
		if r.Run != nil {
			runs = append(runs, *r.Run)
		}
	}
	cmp, err := reports.WriteComparison(out, runs)
	if err != nil {
		return usageErr("--out: %v", err)
	}
	code := exitOK
	for _, r := range results {
		code = worseExit(code, r.Code)
	}
	if g.JSON {
		if err := writeJSON(std.out, comparisonJSON(cmp, results, out, code)); err != nil {
			return err
		}
	} else {
		fmt.Fprint(std.out, cmp.Text())
	}
	for _, r := range results {
		if r.Run == nil && r.Err != nil {
			fmt.Fprintf(text, "%s: not run: %s\n", r.Label, firstLine(r.Err.Error()))
		}
	}
	fmt.Fprintf(text, "comparison: %s (%s, %s.png/.svg, %s.png/.svg)\n", out, reports.CompareMarkdownFile, reports.CompareLatencyPlot, reports.CompareThroughputPlot)
	if code != exitOK {
		return &exitError{code: code, err: compareErr(results)}
	}
	return nil
}

// load reads the saved runs named on the command line.
func (c *compareCmd) load() ([]compareResult, string, error) {
	out := c.Out
	if out == "" {
		out = filepath.Join("idembench-out", "compare-"+time.Now().Format("20060102-150405.000"))
	}
	var results []compareResult
	for _, dir := range c.Dirs {
		run, err := reports.LoadRun("", dir)
		if err != nil {
			return nil, "", usageErr("%v", err)
		}
		results = append(results, compareResult{Label: run.Label, Dir: dir, Run: &run, Code: verdictCodeOf(run.Summary.Verdict)})
	}
	return results, out, nil
}

// configs lists the configurations to run: every backend × sink × engine,
// in the order given, without the known-bad designs on server backends.
func (c *compareCmd) configs() ([]compareConfig, []compareResult, error) {
	var cfgs []compareConfig
	var skipped []compareResult
	for _, b := range c.Backends {
		if !slices.Contains([]string{backendMemory, backendRedis, backendPostgres}, b) {
			return nil, nil, usageErr("--backends: %q is not memory, redis or postgres", b)
		}
		for _, e := range c.Engines {
			if !slices.Contains(engineNames(), e) {
				return nil, nil, usageErr("--engines: %q: want one of %s", e, strings.Join(engineNames(), ", "))
			}
			for _, s := range c.Sinks {
				if !slices.Contains([]string{"plain", "fenced", "tx"}, s) {
					return nil, nil, usageErr("--sinks: %q is not plain, fenced or tx", s)
				}
				cfg := compareConfig{Backend: b, Sink: s, Engine: e}
				if e != engineIdem && b != backendMemory {
					skipped = append(skipped, compareResult{Label: c.label(cfg), Err: fmt.Errorf("%s is an in-memory design (it runs on --backends memory only)", e)})
					continue
				}
				cfgs = append(cfgs, cfg)
			}
		}
	}
	if len(cfgs) == 0 {
		return nil, nil, usageErr("--backends, --sinks and --engines leave nothing to run")
	}
	return cfgs, skipped, nil
}

// label names a configuration: its backend, then its engine and sink when
// they vary (or the engine when it is not idem).
func (c *compareCmd) label(cfg compareConfig) string {
	parts := []string{cfg.Backend}
	if len(c.Engines) > 1 || cfg.Engine != engineIdem {
		parts = append(parts, cfg.Engine)
	}
	if len(c.Sinks) > 1 {
		parts = append(parts, cfg.Sink)
	}
	return strings.Join(parts, " ")
}

// runAll runs the scenario once per configuration, one after the other,
// each into its own directory under the output directory.
func (c *compareCmd) runAll(ctx context.Context, std stdio, text io.Writer, g *globals) ([]compareResult, string, error) {
	sc, err := scenarios.Load(c.Scenario)
	if err != nil {
		return nil, "", usageErr("--scenario: %v", err)
	}
	if c.Duration < 0 || c.Clients < 0 || !c.thresholdFlags.valid() {
		return nil, "", usageErr("--duration, --clients and the thresholds must not be negative (and --max-error-rate at most 1)")
	}
	cfgs, skipped, err := c.configs()
	if err != nil {
		return nil, "", err
	}
	seed := c.Seed
	if seed == 0 {
		seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	out := c.Out
	if out == "" {
		out = filepath.Join("idembench-out", "compare-"+time.Now().Format("20060102-150405.000"))
	}
	fmt.Fprintf(text, "idembench compare: scenario %s · seed %d · %d configurations · out %s\n", sc.Name, seed, len(cfgs), out)
	var results []compareResult
	for i, cfg := range cfgs {
		label := c.label(cfg)
		dir := filepath.Join(out, strings.NewReplacer("/", "-", " ", "_").Replace(label))
		sp := runSpec{
			Scenario: sc, ScenarioArg: c.Scenario,
			Backend: cfg.Backend, Engine: cfg.Engine, Sink: cfg.Sink, Recovery: c.Recovery,
			Seed: seed, Duration: c.Duration, Clients: c.Clients, Rate: c.Rate,
			Out: dir, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
			CheckTimeout: c.CheckTimeout,
			Thresholds:   c.thresholds(sc),
			Progress:     newProgress(std.err, g.NoProgress, fmt.Sprintf("[%d/%d] %s", i+1, len(cfgs), label)),
		}
		u := resolveBackendURLs(&sp)
		o, err := execute(ctx, sp)
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		r := compareResult{Label: label, Dir: dir}
		if err != nil {
			err = withBackendHint(err, cfg.Backend, u)
			r.Err, r.Code = err, exitUsage
			var ee *exitError
			if errors.As(err, &ee) {
				r.Code = ee.code
			}
			fmt.Fprintf(text, "[%d/%d] %s: %v\n", i+1, len(cfgs), label, err)
			results = append(results, r)
			continue
		}
		run := reports.Run{Label: label, Summary: o.Summary}
		r.Run, r.Code = &run, verdictCode(o.Report.Verdict)
		fmt.Fprintf(text, "[%d/%d] %s: verdict %s · %.0f calls/s · p99 %s · %s\n", i+1, len(cfgs), label,
			strings.ToUpper(string(o.Report.Verdict)), o.Summary.ThroughputPerS, msDur(o.Summary.Latency.Overall.P99Ms), dir)
		for _, m := range missesOf(o.Summary) {
			fmt.Fprintf(text, "[%d/%d] %s: threshold missed: %s\n", i+1, len(cfgs), label, m.Reason)
			if r.Code == exitOK {
				r.Code = exitThreshold
			}
		}
		results = append(results, r)
	}
	return append(results, skipped...), out, nil
}

// exitRank orders exit codes from best to worst: a safety violation is the
// worst news, then a configuration that could not run, an unreachable
// backend, an inconclusive check and a missed threshold.
var exitRank = []int{exitOK, exitThreshold, exitInconclusive, exitEnvironment, exitUsage, exitViolation}

// worseExit returns the worse of two exit codes.
func worseExit(a, b int) int {
	if slices.Index(exitRank, b) > slices.Index(exitRank, a) {
		return b
	}
	return a
}

// compareErr says which runs failed.
func compareErr(results []compareResult) error {
	var bad []string
	for _, r := range results {
		switch {
		case r.Code == exitOK:
		case r.Code == exitThreshold:
			bad = append(bad, r.Label+": threshold missed")
		case r.Run != nil:
			bad = append(bad, r.Label+": verdict "+r.Run.Summary.Verdict)
		default:
			bad = append(bad, r.Label+": not run")
		}
	}
	return errors.New(strings.Join(bad, "; "))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

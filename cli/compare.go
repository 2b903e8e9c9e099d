package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// compareCmd is `idembench compare`.
type compareCmd struct {
	Dirs     []string `arg:"" optional:"" help:"Saved run directories to compare instead of running (each holding summary.json or history.jsonl), or two or more report cards of idembench http (report-card.json) to put side by side." placeholder:"RUN-DIR|CARD"`
	Backends []string `help:"Store backends to run, in order, each at most once: memory, redis, postgres." default:"memory" sep:","`
	Sinks    []string `help:"Effect sinks to run, each at most once: plain, fenced, tx." default:"fenced" sep:","`
	Engines  []string `help:"Engines to run, each at most once (this binary: ${engines}); an engine runs only on the backends it supports (the known-bad designs: memory)." default:"idem" sep:","`
	Recovery bool     `help:"Install the engine's recovery hook in every run." default:"true" negatable:""`
	Out      string   `help:"Directory for compare.md, the overlaid plots and one run directory per configuration (default: ./idembench-out/compare-<timestamp>): missing, empty, or an earlier idembench output, which is replaced." placeholder:"DIR"`
	workloadFlags
	thresholdFlags // applied to every run
}

// compareConfig is one configuration of a comparison.
type compareConfig struct {
	Backend, Sink string
	Engine        harness.StoreFactory
}

// compareResult is one configuration's outcome: a run, or why there is none.
type compareResult struct {
	Label string
	Dir   string
	Run   *reports.Run // nil when the run did not happen
	Code  int          // the run's exit code
	Err   error        // why the run failed or was skipped
}

func (c *compareCmd) Run(ctx context.Context, std stdio, g *globals, reg *harness.Registry) error {
	// stdout holds the table (or its JSON) alone; what happens on the way
	// goes to stderr.
	text := std.err
	if cards, err := cardArgs(c.Dirs); err != nil || cards {
		if err != nil {
			return err
		}
		return compareCardFiles(std, g, c.Dirs)
	}
	var results []compareResult
	var out string
	var err error
	// od is where new runs go: beside out, moved into place at the end
	// (replacing a previous comparison). Loaded runs are compared in place:
	// their directory may be inside out.
	od := &outDir{}
	if len(c.Dirs) > 0 {
		results, out, err = c.load()
	} else {
		results, out, od, err = c.runAll(ctx, std, text, g, reg)
	}
	if ctx.Err() != nil && od.tmp != "" {
		return c.interrupted(results, od)
	}
	if err != nil {
		od.discard()
		return err
	}
	var runs []reports.Run
	for _, r := range results {
		if r.Run != nil {
			runs = append(runs, *r.Run)
		}
	}
	write := out
	if od.tmp != "" {
		write = od.tmp
	}
	cmp, err := reports.WriteComparison(write, runs)
	if err != nil {
		od.discard()
		return usage("--out %s: %v", out, err)
	}
	if err := od.commit(); err != nil {
		return err
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
		return codeError(code, compareErr(results))
	}
	return nil
}

// interrupted ends a comparison cut short: the runs that finished are
// compared (compare.md), the one under way keeps its history so far, and
// all of it is moved into place; the one line says what was written.
func (c *compareCmd) interrupted(results []compareResult, od *outDir) error {
	var runs []reports.Run
	for _, r := range results {
		if r.Run != nil {
			runs = append(runs, *r.Run)
		}
	}
	if len(runs) > 0 {
		_, _ = reports.WriteComparison(od.tmp, runs)
	}
	if err := od.commit(); err != nil {
		return fmt.Errorf("%w: %v", errInterrupted, err)
	}
	return interrupted(od.final)
}

// load reads the saved runs named on the command line. --out follows the
// rule of every output directory (missing, empty or idembench's), but the
// comparison is written in place: the runs may be inside it.
func (c *compareCmd) load() ([]compareResult, string, error) {
	out := c.Out
	if out == "" {
		out = filepath.Join("idembench-out", "compare-"+time.Now().Format("20060102-150405.000"))
	}
	if _, err := newOutDir(out); err != nil {
		return nil, "", err
	}
	var results []compareResult
	for _, dir := range c.Dirs {
		run, err := reports.LoadRun("", dir)
		if err != nil {
			if exists(filepath.Join(dir, reports.SummaryFile)) {
				return nil, "", usage("%s: cannot read %s (%v); rebuild it from %s with: idembench report --recheck %s",
					dir, reports.SummaryFile, unwrapReports(err), reports.HistoryFile, dir)
			}
			return nil, "", usage("%v", err)
		}
		results = append(results, compareResult{Label: run.Label, Dir: dir, Run: &run, Code: exitCode(verdictError(checker.Verdict(run.Summary.Verdict)))})
	}
	return results, out, nil
}

// unwrapReports returns the innermost cause of a reports error, without
// the package prefixes and the path its message repeats.
func unwrapReports(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// configs lists the configurations to run: every backend × sink × engine,
// in the order given, without an engine on a backend it does not support.
// Each list names a value at most once (a configuration is one run and one
// directory).
func (c *compareCmd) configs(reg *harness.Registry) ([]compareConfig, []compareResult, error) {
	for _, l := range []struct {
		flag string
		vals []string
	}{{"--backends", c.Backends}, {"--sinks", c.Sinks}, {"--engines", c.Engines}} {
		for i, v := range l.vals {
			if slices.Contains(l.vals[:i], v) {
				return nil, nil, usage("%s: %s is given twice", l.flag, v)
			}
		}
	}
	var cfgs []compareConfig
	var skipped []compareResult
	for _, b := range c.Backends {
		if _, err := harness.ParseBackend(b); err != nil {
			return nil, nil, usage("--backends: %q is not memory, redis or postgres", b)
		}
		for _, name := range c.Engines {
			e, err := reg.Lookup(name)
			if err != nil {
				return nil, nil, usage("--engines: %v", err)
			}
			for _, s := range c.Sinks {
				if !slices.Contains([]string{"plain", "fenced", "tx"}, s) {
					return nil, nil, usage("--sinks: %q is not plain, fenced or tx", s)
				}
				cfg := compareConfig{Backend: b, Sink: s, Engine: e}
				if !e.Supports(harness.Backend(b)) {
					skipped = append(skipped, compareResult{Label: c.label(cfg), Err: fmt.Errorf("%s runs on %v only", name, e.Backends)})
					continue
				}
				cfgs = append(cfgs, cfg)
			}
		}
	}
	if len(cfgs) == 0 {
		return nil, nil, usage("--backends, --sinks and --engines leave nothing to run")
	}
	return cfgs, skipped, nil
}

// label names a configuration: its backend, then its engine and sink when
// they vary (or the engine when it is not idem).
func (c *compareCmd) label(cfg compareConfig) string {
	parts := []string{cfg.Backend}
	if len(c.Engines) > 1 || cfg.Engine.Name != harness.ReferenceEngine {
		parts = append(parts, cfg.Engine.Name)
	}
	if len(c.Sinks) > 1 {
		parts = append(parts, cfg.Sink)
	}
	return strings.Join(parts, " ")
}

// runAll runs the scenario once per configuration, one after the other,
// each into its own directory under the output directory. Every flag is
// checked, and every configuration's spec, before the first run. When ctx
// ends it returns the results so far with ctx's error.
func (c *compareCmd) runAll(ctx context.Context, std stdio, text io.Writer, g *globals, reg *harness.Registry) ([]compareResult, string, *outDir, error) {
	none := &outDir{}
	sc, seed, err := c.resolve(c.thresholdFlags)
	if err != nil {
		return nil, "", none, err
	}
	cfgs, skipped, err := c.configs(reg)
	if err != nil {
		return nil, "", none, err
	}
	for _, cfg := range cfgs {
		sp, _ := c.spec(sc, cfg, seed)
		if err := sp.Validate(); err != nil {
			return nil, "", none, usage("%s: %v", c.label(cfg), err)
		}
	}
	out := c.Out
	if out == "" {
		out = filepath.Join("idembench-out", "compare-"+time.Now().Format("20060102-150405.000"))
	}
	od, err := newOutDir(out)
	if err != nil {
		return nil, "", none, err
	}
	fmt.Fprintf(text, "idembench compare: scenario %s · seed %d · %d configurations · out %s\n", sc.Name, seed, len(cfgs), out)
	var results []compareResult
	for i, cfg := range cfgs {
		r := c.runOne(ctx, std, text, g, sc, cfg, seed, od.runPath(), out, fmt.Sprintf("[%d/%d]", i+1, len(cfgs)))
		if ctx.Err() != nil {
			return results, out, od, ctx.Err()
		}
		results = append(results, r)
	}
	return append(results, skipped...), out, od, nil
}

// spec returns the harness spec of one configuration (without Out and
// Progress) and its backend's URL.
func (c *compareCmd) spec(sc *scenarios.Scenario, cfg compareConfig, seed int64) (harness.Spec, backendURL) {
	return c.workloadFlags.spec(c.thresholdFlags, cfg.Engine, cfg.Backend, cfg.Sink, c.Recovery, sc, seed)
}

// runOne runs one configuration of the comparison into its directory under
// base; out is where that directory will be once the comparison is moved
// into place. An interrupted run says nothing: the command's one line does.
func (c *compareCmd) runOne(ctx context.Context, std stdio, text io.Writer, g *globals, sc *scenarios.Scenario, cfg compareConfig, seed int64, base, out, step string) compareResult {
	label := c.label(cfg)
	name := strings.NewReplacer("/", "-", " ", "_").Replace(label)
	dir := filepath.Join(out, name)
	sp, u := c.spec(sc, cfg, seed)
	sp.Out = filepath.Join(base, name)
	if p := newProgress(std.err, g.NoProgress, step+" "+label); p != nil {
		sp.Progress = p
	}
	o, err := untilInterrupted(ctx, func() (*harness.Outcome, error) { return harness.Run(ctx, sp) })
	r := compareResult{Label: label, Dir: dir}
	if ctx.Err() != nil {
		return r
	}
	if err != nil {
		err = withBackendHint(err, cfg.Backend, u)
		r.Err, r.Code = err, exitCode(err)
		fmt.Fprintf(text, "%s %s: %v\n", step, label, err)
		return r
	}
	run := reports.Run{Label: label, Summary: o.Summary}
	r.Run, r.Code = &run, exitCode(verdictError(o.Report.Verdict))
	fmt.Fprintf(text, "%s %s: verdict %s · %.0f calls/s · p99 %s · %s\n", step, label,
		strings.ToUpper(string(o.Report.Verdict)), o.Summary.ThroughputPerS, msDur(o.Summary.Latency.Overall.P99Ms), dir)
	for _, m := range missesOf(o.Summary) {
		fmt.Fprintf(text, "%s %s: threshold missed: %s\n", step, label, m.Reason)
		if r.Code == exitOK {
			r.Code = exitThreshold
		}
	}
	return r
}

// compareErr says which runs failed.
func compareErr(results []compareResult) string {
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
	return strings.Join(bad, "; ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Help is the detailed help of `idembench compare --help`, with examples.
func (c *compareCmd) Help() string {
	return `Runs the same scenario with the same seed once per configuration, one
after the other (every --backends × --engines × --sinks combination), then
prints the side-by-side table (verdict, violations, calls, throughput,
error rate, p50/p99/p99.9/max latency) and writes compare.md and the
overlaid plots compare-latency.png/.svg and compare-throughput.png/.svg
into --out, with one run directory per configuration (the progress of the
runs goes to stderr, the table alone to stdout). With run directories
as arguments it compares those saved runs instead of running.

Examples:

    idembench compare --backends memory,redis,postgres --duration 5s --out cmp
    idembench compare --sinks fenced,plain --scenario gc-pause --duration 2s   # plain is caught: exit 1
    idembench compare base/run out/run          # two saved runs side by side
    idembench compare lib-a/report-card.json lib-b/report-card.json   # two http report cards

` + exitCodesHelp + `
The code is the worst of the runs: 1 if any run has a safety violation,
else 2 if a configuration could not run, else 5 if a backend was
unreachable, else 3 if a check was inconclusive, else 4 if a run missed a
threshold (--max-p99, --min-throughput, --max-error-rate), else 0.`
}

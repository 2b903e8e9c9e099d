package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idembench/idembench/blackbox"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/reports"
)

// reportCmd is `idembench report DIR`.
type reportCmd struct {
	Dir     string        `arg:"" help:"A run directory holding history.jsonl (and usually summary.json)." placeholder:"DIR" type:"existingdir"`
	Recheck bool          `help:"Run the checker again instead of keeping the verdict stored in summary.json; the exit code is then the verdict's."`
	Timeout time.Duration `help:"Budget of the linearizability check under --recheck; when it runs out the verdict is inconclusive." default:"30s"`
}

func (c *reportCmd) Run(ctx context.Context, std stdio, g *globals) error {
	if err := noHistory("report", c.Dir); err != nil {
		return err
	}
	file := filepath.Join(c.Dir, reports.HistoryFile)
	if _, err := os.Stat(file); err != nil {
		return usage("report %s: %v", c.Dir, err)
	}
	if historyOption(file) == harness.HistoryOptionSampled {
		return usage("report %s: the history holds only 1 key in 16 (--history=sampled): the reports drawn from it would replace the run's figures with the sample's, so the run's own reports stay; idembench check %s re-checks the sampled keys", c.Dir, c.Dir)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	opts := reports.RegenerateOptions{
		Recheck: c.Recheck,
		Check:   checker.Options{Timeout: c.Timeout, VisualizeDir: filepath.Join(c.Dir, "violations")},
	}
	reg, err := reports.RegenerateRun(c.Dir, opts)
	if errors.Is(err, reports.ErrSummaryUnreadable) {
		return usage("report %s: %v; run idembench report --recheck %s to rebuild it from the history", c.Dir, err, c.Dir)
	}
	if err != nil {
		return usage("report %s: %v", c.Dir, err)
	}
	// A black-box run (idembench http) keeps its oracle and conformance
	// section, which RegenerateRun does not know about.
	if _, err := blackbox.AppendReportSection(c.Dir); err != nil {
		return usage("report %s: %v", c.Dir, err)
	}
	s := reg.Summary
	text := textOut(std, g)
	how := reg.VerdictSource()
	fmt.Fprintf(text, "idembench report: %s\n", c.Dir)
	fmt.Fprintf(text, "run: scenario %s · backend %s · engine %s · seed %d\n", s.Scenario, s.Backend, s.Engine, s.Seed)
	fmt.Fprintf(text, "verdict: %s (%s) · %d calls · %.0f calls/s · p99 %s\n",
		strings.ToUpper(s.Verdict), how, s.Counts.Calls, s.ThroughputPerS, msDur(s.Latency.Overall.P99Ms))
	for _, m := range missesOf(s) {
		fmt.Fprintf(text, "threshold missed: %s\n", m.Reason)
	}
	fmt.Fprintf(text, "wrote: %s\n", strings.Join(reportFiles(), ", "))
	if err := writeSummaryJSON(std, g, s); err != nil {
		return err
	}
	if reg.Rechecked {
		return verdictError(checker.Verdict(s.Verdict))
	}
	return nil
}

// reportFiles names the files reports.Regenerate writes.
func reportFiles() []string {
	return []string{
		reports.SummaryFile, reports.MarkdownFile, reports.HTMLFile,
		reports.LatencyPlot + ".png", reports.LatencyPlot + ".svg",
		reports.ThroughputPlot + ".png", reports.ThroughputPlot + ".svg",
		reports.LatencyOverTimePlot + ".png",
	}
}

// Help is the detailed help of `idembench report --help`, with examples.
func (c *reportCmd) Help() string {
	return `Rebuilds summary.json, report.md, report.html and the plots of a run
directory from its history.jsonl, for instance after the reports changed.
The black-box section of an "idembench http" run (oracle, conformance
table) is kept, from its conformance.json.
The verdict stored in summary.json is kept (the command only re-draws and
exits 0) unless --recheck runs the checker again, or the directory has no
summary.json (the history is then checked); the exit code is then the
verdict's. Thresholds, the replay command and the machine description are
kept from the stored summary.json.

Examples:

    idembench report idembench-out/20260101-120000.000
    idembench report --recheck out/run
    idembench report --json out/run | jq .throughput_per_s

Exit codes: 0 reports written (the stored verdict kept, whatever it is),
1 safety violation and 3 inconclusive (only when the history was checked:
--recheck, or no summary.json), 2 usage error (no such directory, or no
history.jsonl in it), 130 interrupted.`
}

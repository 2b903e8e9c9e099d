package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// checkCmd is `idembench check`.
type checkCmd struct {
	Path      string        `arg:"" help:"A run directory (holding history.jsonl) or a history file." placeholder:"DIR|FILE"`
	Timeout   time.Duration `help:"Budget of the linearizability check, above 0 and at most 1h; when it runs out the verdict is inconclusive." default:"30s"`
	Visualize string        `help:"Directory for the Porcupine HTML of failing keys (default: <run dir>/violations for a run directory; none for a file)." placeholder:"DIR"`
}

func (c *checkCmd) Run(ctx context.Context, std stdio, g *globals) error {
	if c.Timeout <= 0 || c.Timeout > scenarios.MaxCheckTimeout {
		return usage("--timeout %s: want above 0 and at most %s", c.Timeout, scenarios.MaxCheckTimeout)
	}
	file, vis := c.Path, c.Visualize
	fi, err := os.Stat(c.Path)
	if err != nil {
		return usage("%v", err)
	}
	if fi.IsDir() {
		if err := noHistory("check", c.Path); err != nil {
			return err
		}
		file = filepath.Join(c.Path, reports.HistoryFile)
		if vis == "" {
			vis = filepath.Join(c.Path, "violations")
		}
	}
	if vis != "" {
		if vi, err := os.Stat(vis); err == nil && !vi.IsDir() {
			return usage("--visualize %s: not a directory", vis)
		}
	}
	if ctx.Err() != nil {
		return interrupted("")
	}
	// Neither reading the history nor checking it watches ctx: an
	// interrupt leaves them to the end of the process and reports at once.
	type checked struct {
		h   *history.History
		rep checker.Report
	}
	res, err := untilInterrupted(ctx, func() (checked, error) {
		h, err := history.DecodeFile(file)
		if err != nil {
			return checked{}, usage("%v", err)
		}
		return checked{h, checker.Check(h, checker.Options{Timeout: c.Timeout, VisualizeDir: vis})}, nil
	})
	if ctx.Err() != nil {
		return interrupted("")
	}
	if err != nil {
		return err
	}
	h, rep := res.h, res.rep
	s := reports.NewSummary(reports.Measure(h, reports.MeasureOptions{}), &rep, reports.Options{})
	hd := h.Header
	text := textOut(std, g)
	fmt.Fprintf(text, "idembench check: %s\n", file)
	fmt.Fprintf(text, "run: scenario %s · backend %s · engine %s · seed %d · %s\n", hd.Scenario, hd.Backend, hd.Engine, hd.Seed, hd.Tool)
	printCounts(text, s, h)
	fmt.Fprintf(text, "effects: %d\n", s.Counts.Effects)
	printLatency(text, s)
	printVerdict(text, rep)
	if hd.Options[harness.HistoryOption] == harness.HistoryOptionSampled {
		fmt.Fprintf(text, "note: %s\n", sampledNote)
	}
	if err := writeSummaryJSON(std, g, s); err != nil {
		return err
	}
	return verdictError(rep.Verdict)
}

// Help is the detailed help of `idembench check --help`, with examples.
func (c *checkCmd) Help() string {
	return `Re-checks a saved history offline and prints the verdict; the exit code
is the verdict's. An interrupt stops it within 2 s and writes nothing.

Examples:

    idembench check idembench-out/20260101-120000.000
    idembench check run/history.jsonl --timeout 2m
    idembench check --json out/run | jq '.violations[]'

Exit codes: 0 pass, 1 safety violation, 2 usage error (a missing or
unreadable history, or a flag out of range), 3 inconclusive (the check ran
out of time: raise --timeout), 130 interrupted.`
}

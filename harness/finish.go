package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

// Finish completes a run whose history o holds (one process, or merged
// from worker processes): it adds the backend fault windows, checks the
// history, measures it and writes the run directory when the spec has an
// Out (history.jsonl first, before the check). It fills in o's Report, Summary, Seed, Warning, Recovery and Dir.
func (p *Prepared) Finish(o *Outcome) (*Outcome, error) {
	sp := p.Spec
	h := o.History
	backendFaults := p.Faults.Windows()
	h.Ops = append(h.Ops, backendFaults...)
	history.SortByCall(h.Ops)
	o.Seed, o.Warning, o.Recovery = sp.Overrides.Seed, p.Warning(), p.Recovery
	copts := checker.Options{Timeout: sp.CheckTimeout}
	if sp.Out != "" {
		copts.VisualizeDir = filepath.Join(sp.Out, "violations")
	}
	if sp.Out != "" { // first: a run interrupted during its check keeps its history
		if err := writeRunHistory(sp.Out, h, sp.History); err != nil {
			return o, ConfigError("run directory: %w", err)
		}
	}
	o.Report = checker.Check(h, copts)
	if p.timed && sp.Clock == nil && len(backendFaults) == 0 {
		checker.CheckTiming(&o.Report, h, runTiming(h.Header.LeaseTTL))
	}
	ropts := reports.Options{ReplayCommand: o.Replay, Overall: o.Latency}
	if u := o.Usage; u != nil {
		ropts.Cost = &reports.Cost{Requests: u.Requests, ReadUnits: u.ReadUnits, WriteUnits: u.WriteUnits, Dollars: u.Dollars, Prices: u.Prices,
			RoundTrips: u.RoundTrips, ServerCPUSeconds: u.ServerCPUSeconds, ServerCPU: u.ServerCPU}
		for _, o := range u.Outcomes {
			ropts.Cost.Outcomes = append(ropts.Cost.Outcomes, reports.OutcomeCost{Outcome: o.Outcome, Calls: o.Calls, Requests: o.Requests, RoundTrips: o.RoundTrips})
		}
	}
	if !sp.Thresholds.IsZero() {
		ropts.Thresholds = &sp.Thresholds
	}
	if sp.Out == "" {
		o.Summary = reports.NewSummary(reports.Measure(h, ropts.MeasureOptions), &o.Report, ropts)
		return o, nil
	}
	var err error
	if o.Summary, err = reports.WriteRunReport(sp.Out, h, o.Report, ropts); err != nil {
		return o, ConfigError("run directory: %w", err)
	}
	o.Dir = sp.Out
	return o, nil
}

// runTiming is how the timing invariants judge a real-time run. The
// store's clock is the wall clock (the memory store's readings carry the
// monotonic clock the history's timeline reads; a server's wall clock may
// drift from it by a little), so T1 allows ClockSlack. T2 needs no slack
// for soundness (a key answered in progress was judged after the call
// began, and a grant or renewal is recorded after the store took it); half
// a lease TTL keeps it clear of the one place it could be wrong, a store
// whose clock is not the wall clock.
func runTiming(ttl time.Duration) checker.Timing {
	return checker.Timing{LeaseTTL: ttl, Slack: max(ttl/2, 100*time.Millisecond), ClockSlack: 10 * time.Millisecond}
}

// writeRunHistory writes what mode keeps of h into dir, and marks h's
// header (HistoryOption, which summary.json shows) when it is not all.
func writeRunHistory(dir string, h *history.History, mode HistoryMode) error {
	switch mode {
	case HistoryNone:
		setOption(h, HistoryOption, HistoryOptionNone)
		return os.MkdirAll(dir, 0o755)
	case HistorySampled:
		setOption(h, HistoryOption, HistoryOptionSampled)
		return WriteHistory(dir, SampleHistory(h))
	}
	return WriteHistory(dir, h)
}

// setOption sets a header option of h.
func setOption(h *history.History, name, value string) {
	if h.Header.Options == nil {
		h.Header.Options = map[string]string{}
	}
	h.Header.Options[name] = value
}

// WriteHistory saves h as dir/history.jsonl (reports.WriteRunReport
// writes the rest of a run directory).
func WriteHistory(dir string, h *history.History) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		return err
	}
	if err := history.Encode(f, h); err != nil {
		f.Close()
		return fmt.Errorf("write history: %w", err)
	}
	return f.Close()
}

// ReplayCommand returns the idembench command line that repeats the run
// of sp with the effective workload cfg, starting with sp.Program
// ("idembench" when empty): --recovery when cfg.Engine.Recovery is on,
// else --no-recovery (whether it was turned off or the sink cannot answer
// recovery lookups).
func ReplayCommand(sp Spec, cfg workload.Config) string {
	program := sp.Program
	if program == "" {
		program = "idembench"
	}
	args := []string{program, "run",
		"--scenario", ShellQuote(sp.ScenarioName),
		"--backend", string(sp.Backend),
		"--engine", sp.Engine.Name,
		"--sink", sp.Sink,
	}
	if cfg.Engine.Recovery { // what ran, not what was asked: a plain sink turns it off
		args = append(args, "--recovery")
	} else {
		args = append(args, "--no-recovery")
	}
	args = append(args,
		"--seed", strconv.FormatInt(sp.Overrides.Seed, 10),
		"--duration", cfg.Duration.String(),
		"--clients", strconv.Itoa(cfg.Clients),
		"--rate", strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
	)
	if cfg.Engine.ClockSkew > 0 {
		args = append(args, "--clock-skew", cfg.Engine.ClockSkew.String())
	}
	if sp.Faults != nil {
		args = append(args, sp.Faults.ReplayArgs...)
	}
	return strings.Join(args, " ")
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package reports

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// The files of a run directory. WriteRunReport writes all but HistoryFile,
// which the caller saves and Regenerate reads.
const (
	HistoryFile  = "history.jsonl"
	SummaryFile  = "summary.json"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	// LatencyPlot, ThroughputPlot (each .png and .svg) and
	// LatencyOverTimePlot (.png only: a scatter in SVG is large).
	LatencyPlot         = "latency"
	ThroughputPlot      = "throughput"
	LatencyOverTimePlot = "latency-over-time"
	// VisualizeDir is where Regenerate has the checker write Porcupine
	// visualizations when it re-checks and checker.Options.VisualizeDir
	// is empty.
	VisualizeDir = "porcupine"
)

// Options tunes WriteRunReport. The zero value is ready to use.
type Options struct {
	MeasureOptions
	// ReplayCommand is the exact command that reproduces the run; it is
	// printed in every report. Empty means unknown.
	ReplayCommand string
	// Machine describes where the run ran; nil means CurrentMachine().
	Machine *Machine
	// Thresholds, when set, are checked and their misses reported in
	// summary.json and report.md.
	Thresholds *Thresholds
	// Cost, when set, is the store's usage (requests, units, dollars);
	// NewSummary divides it by the run's Do calls into Summary.Cost.
	Cost *Cost
	// Overall, when set, is the latency of every call merged exactly
	// from the histograms of the processes that ran them (the workers of
	// a multi-process or multi-host run, LatencyWire): the summary's
	// overall figures, its spectrum and the p99 threshold use it instead
	// of the latency measured from the history. The plots still come
	// from the history.
	Overall *Latency
}

// WriteRunReport measures h and writes the run's reports into dir (created
// if needed): summary.json, report.md, report.html and, when the program
// links a Plotter (RegisteredPlotter), latency.png/.svg, throughput.png/.svg
// and latency-over-time.png. rep is the checker's
// report on h; a zero Report gives the verdict "unchecked". Visualization
// paths in rep are rewritten relative to dir so the directory can be moved.
// It returns the Summary it wrote; on error some files may be missing.
func WriteRunReport(dir string, h *history.History, rep checker.Report, opts Options) (*Summary, error) {
	m := Measure(h, opts.MeasureOptions)
	s := NewSummary(m, &rep, opts)
	relativize(s, dir)
	return s, writeAll(dir, m, s)
}

// RegenerateOptions tunes Regenerate. Zero fields of Options are taken from
// the stored summary.json when there is one.
type RegenerateOptions struct {
	Options
	// Recheck runs checker.Check on the history instead of reusing the
	// verdict stored in summary.json.
	Recheck bool
	// Check tunes the re-check. An empty VisualizeDir means dir/porcupine.
	Check checker.Options
}

// Regenerate rebuilds every report in dir from dir/history.jsonl (the CLI's
// "idembench report DIR"), for instance after this package changed.
//
// The verdict, invariants, violations and notes are read from the existing
// dir/summary.json, not recomputed: a regeneration is fast, cannot change
// the verdict, and keeps the visualization links valid. Set Recheck to run
// checker.Check again instead; Regenerate also re-checks when there is no
// summary.json. The replay command, machine, thresholds, late-send slack
// and bucket width also come from the stored summary unless opts sets them,
// so the reports still describe the machine the run ran on. A summary.json
// that cannot be read is an error unless Recheck is set.
func Regenerate(dir string, opts RegenerateOptions) (*Summary, error) {
	r, err := RegenerateRun(dir, opts)
	if err != nil {
		return nil, err
	}
	return r.Summary, nil
}

// ErrSummaryUnreadable is wrapped by RegenerateRun when the run's summary
// cannot be read and RegenerateOptions.Recheck is not set: setting it
// rebuilds the summary from the history.
var ErrSummaryUnreadable = errors.New("the run's summary cannot be read")

// Regeneration is what RegenerateRun did.
type Regeneration struct {
	// Summary is the summary it wrote.
	Summary *Summary
	// Rechecked reports that the checker ran again: Recheck was set, or
	// there was no summary.json to keep the verdict from.
	Rechecked bool
	// SummaryMissing reports that dir had no summary.json.
	SummaryMissing bool
}

// VerdictSource says where the verdict of the rewritten reports comes
// from, for a line of a command's output: "verdict kept from summary.json",
// "re-checked", or "checked: no summary.json in the directory".
func (r *Regeneration) VerdictSource() string {
	switch {
	case r.SummaryMissing:
		return "checked: no " + SummaryFile + " in the directory"
	case r.Rechecked:
		return "re-checked"
	}
	return "verdict kept from " + SummaryFile
}

// RegenerateRun is Regenerate, and also says whether the verdict was kept
// or checked again (and why).
func RegenerateRun(dir string, opts RegenerateOptions) (*Regeneration, error) {
	h, err := readHistory(filepath.Join(dir, HistoryFile))
	if err != nil {
		return nil, err
	}
	r := &Regeneration{}
	old, err := ReadSummaryFile(filepath.Join(dir, SummaryFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old, r.SummaryMissing = nil, true
	case err != nil && !opts.Recheck:
		return nil, fmt.Errorf("reports: regenerate: %w: %w", ErrSummaryUnreadable, err)
	case err != nil:
		old = nil
	}
	o := opts.Options
	if old != nil {
		inherit(&o, old)
	}
	m := Measure(h, o.MeasureOptions)
	var s *Summary
	if old == nil || opts.Recheck {
		r.Rechecked = true
		co := opts.Check
		if co.VisualizeDir == "" {
			co.VisualizeDir = filepath.Join(dir, VisualizeDir)
		}
		rep := checker.Check(h, co)
		s = NewSummary(m, &rep, o)
		relativize(s, dir)
	} else {
		s = NewSummary(m, nil, o)
		s.Verdict, s.Invariants, s.Violations = old.Verdict, old.Invariants, old.Violations
		s.InconclusiveKeys, s.Notes = old.InconclusiveKeys, old.Notes
	}
	r.Summary = s
	return r, writeAll(dir, m, s)
}

// inherit fills the zero fields of o from a stored summary.
func inherit(o *Options, old *Summary) {
	if o.ReplayCommand == "" {
		o.ReplayCommand = old.ReplayCommand
	}
	if o.Machine == nil {
		mc := old.Machine
		o.Machine = &mc
	}
	if o.Thresholds == nil && old.Thresholds != nil {
		t := old.Thresholds.Thresholds()
		o.Thresholds = &t
	}
	if o.LateSlack == 0 {
		o.LateSlack = time.Duration(old.LateSends.SlackMs * 1e6)
		if o.LateSlack == 0 {
			o.LateSlack = -1 // stored slack 0: every delay counted
		}
	}
	if o.Bucket == 0 {
		o.Bucket = time.Duration(old.Timeline.BucketS * 1e9)
	}
}

// readHistory reads the history file at path (history.DecodeFile), its
// errors prefixed with the package's name.
func readHistory(path string) (*history.History, error) {
	h, err := history.DecodeFile(path)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	return h, nil
}

// relativize rewrites visualization paths relative to dir, with forward
// slashes, when both resolve to absolute paths.
func relativize(s *Summary, dir string) {
	for i := range s.Violations {
		v := &s.Violations[i]
		if v.Visualization == "" {
			continue
		}
		absDir, err1 := filepath.Abs(dir)
		absVis, err2 := filepath.Abs(v.Visualization)
		if err1 != nil || err2 != nil {
			continue
		}
		if rel, err := filepath.Rel(absDir, absVis); err == nil {
			v.Visualization = filepath.ToSlash(rel)
		}
	}
}

// writeAll writes the plots (when a Plotter is registered), summary.json,
// report.md and report.html.
func writeAll(dir string, m *Measurement, s *Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	var plots map[string][]byte
	if p := RegisteredPlotter(); p != nil {
		var err error
		if plots, err = p.RunPlots(m); err != nil {
			return fmt.Errorf("reports: plots: %w", err)
		}
		if err := writePlots(dir, plots); err != nil {
			return err
		}
	}
	if err := WriteSummaryFile(filepath.Join(dir, SummaryFile), s); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := writeFile(filepath.Join(dir, MarkdownFile), func(w io.Writer) error { return WriteMarkdown(w, s) }); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := writeFile(filepath.Join(dir, HTMLFile), func(w io.Writer) error { return writeHTML(w, s, plots) }); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

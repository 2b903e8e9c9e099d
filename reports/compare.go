package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// The files WriteComparison writes: compare.md, and compare-latency and
// compare-throughput as .png and .svg.
const (
	CompareMarkdownFile   = "compare.md"
	CompareLatencyPlot    = "compare-latency"
	CompareThroughputPlot = "compare-throughput"
)

// Run is one run of a comparison: a label for tables and legends and the
// run's Summary.
type Run struct {
	Label   string
	Summary *Summary
}

// LoadRun reads the run in dir for a comparison: dir/summary.json, or, when
// there is none, a measurement of dir/history.jsonl (verdict "unchecked",
// machine unknown). An empty label means the base name of dir.
func LoadRun(label, dir string) (Run, error) {
	if label == "" {
		label = filepath.Base(filepath.Clean(dir))
	}
	s, err := ReadSummaryFile(filepath.Join(dir, SummaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		h, herr := readHistory(filepath.Join(dir, HistoryFile))
		if herr != nil {
			return Run{}, fmt.Errorf("reports: %s holds neither %s nor a readable %s: %w", dir, SummaryFile, HistoryFile, herr)
		}
		return RunFromHistory(label, h, nil, Options{Machine: &Machine{}}), nil
	}
	if err != nil {
		return Run{}, fmt.Errorf("reports: %w", err)
	}
	return Run{Label: label, Summary: s}, nil
}

// RunFromHistory measures h and summarizes it for a comparison; rep may be
// nil (verdict "unchecked").
func RunFromHistory(label string, h *history.History, rep *checker.Report, opts Options) Run {
	return Run{Label: label, Summary: NewSummary(Measure(h, opts.MeasureOptions), rep, opts)}
}

// ComparisonRow holds the figures of one run side by side with the others.
type ComparisonRow struct {
	Label, Verdict, Scenario, Backend, Engine string
	Calls, Violations                         int
	ThroughputPerS, ErrorRate                 float64
	P50Ms, P99Ms, P999Ms, MaxMs               float64
	// Unmeasured reports a run with no measured call (every call of it
	// never returned); its latency cells read "—" (Unmeasured).
	Unmeasured bool
	// Cost is the run's cost model, nil when its store does not count
	// requests; the table has cost columns when any row has one.
	Cost *Cost
}

// Comparison is the side-by-side table of several runs, in the order given.
type Comparison struct {
	Rows []ComparisonRow
}

// Compare tabulates runs; a run with a nil Summary is skipped.
func Compare(runs []Run) Comparison {
	var c Comparison
	for _, r := range runs {
		s := r.Summary
		if s == nil {
			continue
		}
		o := s.Latency.Overall
		c.Rows = append(c.Rows, ComparisonRow{
			Label: r.Label, Verdict: s.Verdict, Scenario: s.Scenario, Backend: s.Backend, Engine: s.Engine,
			Calls: s.Counts.Calls, Violations: s.ViolationCount(),
			ThroughputPerS: s.ThroughputPerS, ErrorRate: s.ErrorRate,
			P50Ms: o.P50Ms, P99Ms: o.P99Ms, P999Ms: o.P999Ms, MaxMs: o.MaxMs, Unmeasured: o.Measured == 0 && o.MaxMs == 0,
			Cost: s.Cost,
		})
	}
	return c
}

var compareHeader = []string{"run", "verdict", "violations", "calls", "throughput (ops/s)", "error rate", "p50 (ms)", "p99 (ms)", "p99.9 (ms)", "max (ms)"}

// costHeader is the cost columns, added when a row has a cost model.
var costHeader = []string{"requests/Do", "$ per million Do", "round trips/Do", "server CPU µs/Do"}

func (r ComparisonRow) cells() []string {
	return []string{r.Label, r.Verdict, count(r.Violations), count(r.Calls), num(r.ThroughputPerS), percent(r.ErrorRate),
		r.lat(r.P50Ms), r.lat(r.P99Ms), r.lat(r.P999Ms), r.lat(r.MaxMs)}
}

// costCells returns the cost columns of a row: "—" where the store does
// not count the figure, "n/a" where the server does not expose its CPU
// time (costNotes says why).
func (r ComparisonRow) costCells() []string {
	c := r.Cost
	if c == nil {
		return []string{Unmeasured, Unmeasured, Unmeasured, Unmeasured}
	}
	out := []string{fmt.Sprintf("%.2f", c.RequestsPerDo), Unmeasured, Unmeasured, Unmeasured}
	if c.Prices != "" {
		out[1] = fmt.Sprintf("%.3f", c.DollarsPerMillionDo)
	}
	if c.RoundTrips > 0 {
		out[2] = fmt.Sprintf("%.2f", c.RoundTripsPerDo)
	}
	switch {
	case strings.HasPrefix(c.ServerCPU, "n/a"):
		out[3] = "n/a"
	case c.ServerCPU != "":
		out[3] = fmt.Sprintf("%.1f", c.ServerCPUMicrosPerDo)
	}
	return out
}

// row returns the cells of r, with the cost columns when cost is set.
func (r ComparisonRow) row(cost bool) []string {
	out := r.cells()
	if cost {
		out = append(out, r.costCells()...)
	}
	return out
}

// header returns the table's columns: the cost columns too when a row has
// a cost model.
func (c Comparison) header() ([]string, bool) {
	for _, r := range c.Rows {
		if r.Cost != nil {
			return append(slices.Clone(compareHeader), costHeader...), true
		}
	}
	return compareHeader, false
}

// costNotes lists the price tables the rows' costs were billed at and,
// per row, where its server CPU figure comes from (or why there is none).
func (c Comparison) costNotes() (prices, cpu []string) {
	for _, r := range c.Rows {
		if r.Cost == nil {
			continue
		}
		if r.Cost.Prices != "" && !slices.Contains(prices, r.Cost.Prices) {
			prices = append(prices, r.Cost.Prices)
		}
		if r.Cost.ServerCPU != "" {
			cpu = append(cpu, r.Label+": "+r.Cost.ServerCPU)
		}
	}
	return prices, cpu
}

func (r ComparisonRow) lat(ms float64) string {
	if r.Unmeasured {
		return Unmeasured
	}
	return num(ms)
}

// Text returns the table as aligned plain text for a terminal: a header
// line, then one line per run; labels and verdicts are left-aligned,
// figures right-aligned.
func (c Comparison) Text() string {
	header, cost := c.header()
	rows := [][]string{header}
	for _, r := range c.Rows {
		rows = append(rows, r.row(cost))
	}
	width := make([]int, len(header))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < 2 {
				line.WriteString(cell + pad)
			} else {
				line.WriteString(pad + cell)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String()
}

// Markdown returns the table as a GitHub Markdown table.
func (c Comparison) Markdown() string {
	var b strings.Builder
	header, cost := c.header()
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|---|---|")
	b.WriteString(strings.Repeat("---:|", len(header)-2) + "\n")
	for _, r := range c.Rows {
		cells := r.row(cost)
		cells[0] = mdCell(cells[0])
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	if prices, cpu := c.costNotes(); len(prices)+len(cpu) > 0 {
		writeCostNote(&b, "Cost counted at the client", prices, cpu)
	}
	return b.String()
}

// writeCostNote writes the paragraph under a table with cost columns:
// lead, what a dash means, then the server CPU and the prices, if any.
func writeCostNote(b *strings.Builder, lead string, prices, cpu []string) {
	b.WriteString("\n" + lead + " (— : the store does not count it).")
	if len(cpu) > 0 {
		b.WriteString(" Server CPU: " + strings.Join(cpu, "; ") + ".")
	}
	if len(prices) > 0 {
		b.WriteString(" Prices: " + strings.Join(prices, "; ") + ".")
	}
	b.WriteString("\n")
}

// WriteComparison writes into dir (created if needed) compare.md (the
// Markdown table and the plots' names) and the overlaid plots:
// compare-latency.png/.svg (each run's overall percentile spectrum) and
// compare-throughput.png/.svg (each run's completed calls per second).
// Fault windows are not shaded: they differ from run to run. The plots are
// drawn by the registered Plotter; without one compare.md says so instead.
func WriteComparison(dir string, runs []Run) (Comparison, error) {
	c := Compare(runs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return c, fmt.Errorf("reports: %w", err)
	}
	md := "## idembench comparison\n\n" + c.Markdown()
	if p := RegisteredPlotter(); p != nil {
		files, err := p.ComparePlots(runs)
		if err == nil {
			err = writePlots(dir, files)
		}
		if err != nil {
			return c, fmt.Errorf("reports: comparison plots: %w", err)
		}
		md += "\n![latency by percentile](" + CompareLatencyPlot + ".png)\n\n![throughput over time](" + CompareThroughputPlot + ".png)\n"
	} else {
		md += "\n" + noPlots + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, CompareMarkdownFile), []byte(md), 0o644); err != nil {
		return c, fmt.Errorf("reports: %w", err)
	}
	return c, nil
}

package blackbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// ConformanceFile is the run directory's machine-readable conformance
// table and oracle description.
const ConformanceFile = "conformance.json"

// finish checks h, writes the run directory and returns the outcome with
// its error class.
func (r *runner) finish(h *history.History, out *Outcome) (Outcome, error) {
	spec := r.spec
	co := checker.Options{Timeout: spec.CheckTimeout}
	if spec.Dir != "" {
		co.VisualizeDir = filepath.Join(spec.Dir, reports.VisualizeDir)
		// The history first: a run interrupted during the check keeps it.
		if err := writeHistory(filepath.Join(spec.Dir, reports.HistoryFile), h); err != nil {
			return *out, err
		}
	}
	out.Check = checker.Check(h, co)
	ro := reports.Options{ReplayCommand: spec.ReplayCommand, Thresholds: spec.Thresholds}
	if spec.Dir != "" {
		s, err := reports.WriteRunReport(spec.Dir, h, out.Check, ro)
		if err != nil {
			return *out, envf("write the run directory: %v", err)
		}
		out.Summary, out.Dir = s, spec.Dir
	} else {
		out.Summary = reports.NewSummary(reports.Measure(h, ro.MeasureOptions), &out.Check, ro)
	}
	if spec.Thresholds != nil {
		out.Misses = spec.Thresholds.Check(out.Summary)
	}
	out.Verdict = out.Check.Verdict
	failed := failedProbes(out.Conformance)
	if len(failed) > 0 && out.Check.Verdict != checker.VerdictViolation {
		out.Verdict = checker.VerdictViolation
	}
	if spec.Dir != "" {
		if err := writeConformance(spec.Dir, out); err != nil {
			return *out, envf("write the run directory: %v", err)
		}
	}
	switch {
	case out.Check.Verdict == checker.VerdictViolation:
		return *out, fmt.Errorf("%w: %s", ErrViolation, violationLine(&out.Check))
	case len(failed) > 0:
		return *out, fmt.Errorf("%w: failed probe(s) %s", ErrConformance, strings.Join(failed, ", "))
	case out.Check.Verdict == checker.VerdictInconclusive:
		return *out, fmt.Errorf("%w: %s", ErrInconclusive, strings.Join(out.Check.Notes, "; "))
	case len(out.Misses) > 0:
		var m []string
		for _, x := range out.Misses {
			m = append(m, x.Reason)
		}
		return *out, fmt.Errorf("%w: %s", ErrThreshold, strings.Join(m, "; "))
	}
	return *out, nil
}

func failedProbes(rs []ProbeResult) []string {
	var ids []string
	for _, p := range rs {
		if p.Status == ProbeFail {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

func violationLine(rep *checker.Report) string {
	var parts []string
	for _, ir := range rep.Invariants {
		if ir.Violations > 0 {
			parts = append(parts, fmt.Sprintf("%s %s on %d key(s)", ir.Invariant, ir.Invariant.Name(), ir.Violations))
		}
	}
	return strings.Join(parts, ", ")
}

func writeHistory(path string, h *history.History) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return envf("write the run directory: %v", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return envf("write the run directory: %v", err)
	}
	w := bufio.NewWriter(f)
	err = history.Encode(w, h)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return envf("write %s: %v", path, err)
	}
	return nil
}

// conformanceDoc is the schema of conformance.json.
type conformanceDoc struct {
	Oracle       string          `json:"oracle"`
	OracleLimits string          `json:"oracle_limits"`
	Draft        string          `json:"draft"`
	Verdict      checker.Verdict `json:"verdict"`
	Probes       []ProbeResult   `json:"probes"`
	Notes        []string        `json:"notes"`
}

// writeConformance writes conformance.json and appends the black-box
// section (oracle, its limits, the conformance table) to report.md and
// report.html.
func writeConformance(dir string, out *Outcome) error {
	if err := writeConformanceJSON(dir, out); err != nil {
		return err
	}
	return appendSection(dir, out)
}

// writeConformanceJSON writes conformance.json.
func writeConformanceJSON(dir string, out *Outcome) error {
	b, err := json.MarshalIndent(conformanceDoc{out.Oracle, out.OracleLimits, Draft, out.Verdict, out.Conformance, out.Notes}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ConformanceFile), append(b, '\n'), 0o644)
}

// AppendReportSection appends the black-box section of the run in dir
// (the oracle, what it cannot see, the notes and the conformance table,
// read from dir's conformance.json) to dir's report.md and report.html, as
// Run does after it wrote them; "idembench report" calls it after
// reports.RegenerateRun rewrote them. It reports false and changes nothing
// when dir has no conformance.json (a run that is not a black-box run). A
// conformance.json that does not decode is an error.
func AppendReportSection(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, ConformanceFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var doc conformanceDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return false, fmt.Errorf("%s: %w", ConformanceFile, err)
	}
	out := &Outcome{Oracle: doc.Oracle, OracleLimits: doc.OracleLimits, Conformance: doc.Probes, Notes: doc.Notes, Verdict: doc.Verdict}
	return true, appendSection(dir, out)
}

// appendSection appends the black-box section of out to dir's report.md
// and report.html.
func appendSection(dir string, out *Outcome) error {
	var md strings.Builder
	WriteConformance(&md, out)
	if err := appendFile(filepath.Join(dir, reports.MarkdownFile), "\n"+md.String()); err != nil {
		return err
	}
	html := "<section><h2>Black-box target</h2><pre>" + htmlEscape(md.String()) + "</pre></section>\n"
	p := filepath.Join(dir, reports.HTMLFile)
	page, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	s := string(page)
	if i := strings.LastIndex(s, "</body>"); i >= 0 {
		s = s[:i] + html + s[i:]
	} else {
		s += html
	}
	return os.WriteFile(p, []byte(s), 0o644)
}

// WriteConformance writes the black-box section of a report as Markdown:
// the oracle and what it cannot see, and the conformance table.
func WriteConformance(w io.Writer, out *Outcome) {
	fmt.Fprintf(w, "## Black-box target\n\n")
	fmt.Fprintf(w, "Effects oracle: **%s**. %s\n\n", out.Oracle, out.OracleLimits)
	for _, n := range out.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(out.Notes) > 0 {
		fmt.Fprintln(w)
	}
	if len(out.Conformance) == 0 {
		fmt.Fprintf(w, "Conformance probes were skipped.\n")
		return
	}
	fmt.Fprintf(w, "### Conformance (%s)\n\n", Draft)
	fmt.Fprintf(w, "| probe | section | expected | observed | result |\n|---|---|---|---|---|\n")
	for _, p := range out.Conformance {
		res := p.Status
		if p.Reason != "" {
			res += " (declared: " + p.Reason + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", p.Title, strings.TrimPrefix(p.Section, Draft+" "),
			cell(p.Expected), cell(p.Observed), cell(res))
	}
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

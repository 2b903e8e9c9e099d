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
	"slices"
	"strings"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// ConformanceFile is the run directory's machine-readable conformance
// table and oracle description.
const ConformanceFile = "conformance.json"

// maxListed caps the violations the checker lists per invariant in a
// black-box run: high enough that summary.json lists every one, so that
// the console, --json, summary.json and report.md give one count.
const maxListed = 1 << 20

// finish checks h, writes the run directory and returns the outcome with
// its error class.
func (r *runner) finish(h *history.History, out *Outcome) (Outcome, error) {
	spec := r.spec
	co := checker.Options{Timeout: spec.CheckTimeout, MaxViolations: maxListed}
	if spec.Dir != "" {
		co.VisualizeDir = filepath.Join(spec.Dir, reports.VisualizeDir)
		// The history first: a run interrupted during the check keeps it.
		if err := writeHistory(filepath.Join(spec.Dir, reports.HistoryFile), h); err != nil {
			return *out, err
		}
	}
	rep := checker.Check(h, co)
	explainI4(h, &rep)
	mergeProbes(&rep, out.Conformance, spec.Strict)
	out.Classes = failedClasses(&rep, out.Conformance)
	out.Verdict = verdictOf(&rep, out.Classes, spec.Strict)
	rep.Verdict = out.Verdict
	rep.Notes = append(rep.Notes, out.Notes...)
	out.Check = rep
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
	out.Card = buildCard(r.t, spec, out)
	if spec.Dir != "" {
		if err := writeCard(spec.Dir, out.Card); err != nil {
			return *out, envf("write the run directory: %v", err)
		}
		if err := writeConformance(spec.Dir, out); err != nil {
			return *out, envf("write the run directory: %v", err)
		}
	}
	deviations := probesOf(out.Conformance, ClassDeviation)
	switch {
	case out.Verdict == checker.VerdictViolation:
		return *out, fmt.Errorf("%w: %s", ErrViolation, failedLine(out))
	case len(deviations) > 0:
		return *out, fmt.Errorf("%w: %s", ErrDeviation, failedLine(out))
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

// VerdictDeviation is the verdict of a run that broke no safety invariant
// but failed a MUST of the declared protocol (exit 6).
const VerdictDeviation checker.Verdict = "deviation"

// verdictOf returns the run's one verdict: violation when a safety check
// failed (or, with strict, a protocol MUST), deviation when only a
// protocol MUST did, else the checker's.
func verdictOf(rep *checker.Report, classes []string, strict bool) checker.Verdict {
	switch {
	case slices.ContainsFunc(classes, func(c string) bool { return c != ClassDeviation }):
		return checker.VerdictViolation
	case len(classes) > 0 && strict:
		return checker.VerdictViolation
	case len(classes) > 0:
		return VerdictDeviation
	}
	return rep.Verdict
}

// invariantClass is the verdict class of a broken invariant.
func invariantClass(inv checker.Invariant) string {
	switch inv {
	case checker.I1AtMostOnce:
		return ClassDoubleExecution
	case checker.I3ReplayConsistency:
		return ClassBrokenReplay
	case ProtocolCheck:
		return ClassDeviation
	}
	return ClassInvariant
}

// failedClasses returns the verdict classes that failed, most serious
// first: double execution, broken replay, invariant violation, protocol
// deviation (the classes of rep's invariants with violations, the probes
// merged in, and the failed MUST probes).
func failedClasses(rep *checker.Report, probes []ProbeResult) []string {
	failed := map[string]bool{}
	for _, ir := range rep.Invariants {
		if ir.Violations > 0 {
			failed[invariantClass(ir.Invariant)] = true
		}
	}
	if len(probesOf(probes, ClassDeviation)) > 0 {
		failed[ClassDeviation] = true
	}
	var out []string
	for _, c := range []string{ClassDoubleExecution, ClassBrokenReplay, ClassInvariant, ClassDeviation} {
		if failed[c] {
			out = append(out, c)
		}
	}
	return out
}

// ProtocolCheck is the row of summary.json's invariants that counts, under
// Spec.Strict, the protocol deviations that failed the run.
const ProtocolCheck checker.Invariant = "protocol"

// mergeProbes adds the probes that found a double execution or a broken
// replay to rep as violations of I1 and I3 on the probe's key, and under
// strict the protocol deviations as violations of ProtocolCheck, so that
// every count (console, summary.json, --json, report.md) includes what
// fails the run with exit 1.
func mergeProbes(rep *checker.Report, probes []ProbeResult, strict bool) {
	rep.Violations = slices.Clone(rep.Violations)
	rep.Invariants = slices.Clone(rep.Invariants)
	for _, p := range probes {
		if p.Status != ProbeFail {
			continue
		}
		var inv checker.Invariant
		switch {
		case p.Class == ClassDoubleExecution:
			inv = checker.I1AtMostOnce
		case p.Class == ClassBrokenReplay:
			inv = checker.I3ReplayConsistency
		case p.Class == ClassDeviation && strict:
			inv = ProtocolCheck
			if !slices.ContainsFunc(rep.Invariants, func(ir checker.InvariantResult) bool { return ir.Invariant == inv }) {
				rep.Invariants = append(rep.Invariants, checker.InvariantResult{Invariant: inv})
			}
		default:
			continue
		}
		rep.Violations = append(rep.Violations, checker.Violation{Invariant: inv, Key: "probe " + p.ID,
			Message: "conformance probe " + p.ID + " (" + p.Title + "): " + p.Observed})
		for i := range rep.Invariants {
			if rep.Invariants[i].Invariant == inv {
				rep.Invariants[i].Violations++
				rep.Invariants[i].Checked++
			}
		}
	}
}

// probesOf returns the ids of the failed probes of class.
func probesOf(rs []ProbeResult, class string) []string {
	var ids []string
	for _, p := range rs {
		if p.Status == ProbeFail && p.Class == class {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// failedLine is Headline without the verdict: what failed.
func failedLine(out *Outcome) string {
	return strings.TrimPrefix(Headline(out), string(out.Verdict)+": ")
}

// headlineIcons mark report.md's first line, as package reports does.
var headlineIcons = map[checker.Verdict]string{
	checker.VerdictOK: "✅", checker.VerdictViolation: "❌", checker.VerdictInconclusive: "⚠️", VerdictDeviation: "❗",
}

// Headline says, in one line, the verdict and which class failed: "violation:
// double execution (I1 on 140 keys)", "deviation: protocol deviation
// (isolation)", "ok (2 warnings: missing-key, concurrent-duplicate)".
func Headline(out *Outcome) string {
	var parts []string
	for _, c := range out.Classes {
		var what []string
		if c == ClassDeviation {
			what = probesOf(out.Conformance, ClassDeviation)
		} else {
			for _, ir := range out.Check.Invariants {
				if ir.Violations > 0 && invariantClass(ir.Invariant) == c {
					what = append(what, fmt.Sprintf("%s on %d key(s)", ir.Invariant, ir.Violations))
				}
			}
		}
		parts = append(parts, c+" ("+strings.Join(what, ", ")+")")
	}
	line := string(out.Verdict)
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, "; ")
	}
	var warn []string
	for _, p := range out.Conformance {
		if p.Status == ProbeWarn {
			warn = append(warn, p.ID)
		}
	}
	if len(warn) > 0 {
		line += fmt.Sprintf(" (%d warning(s): %s)", len(warn), strings.Join(warn, ", "))
	}
	return line
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
	Profile      string          `json:"profile,omitempty"`
	Verdict      checker.Verdict `json:"verdict"`
	Classes      []string        `json:"classes,omitempty"`
	Headline     string          `json:"headline,omitempty"`
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
	doc := conformanceDoc{Oracle: out.Oracle, OracleLimits: out.OracleLimits, Draft: Draft, Profile: out.Profile,
		Verdict: out.Verdict, Classes: out.Classes, Probes: out.Conformance, Notes: out.Notes}
	if out.Verdict != "" {
		doc.Headline = Headline(out)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
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
	out := &Outcome{Oracle: doc.Oracle, OracleLimits: doc.OracleLimits, Profile: doc.Profile, Conformance: doc.Probes, Notes: doc.Notes,
		Verdict: doc.Verdict, Classes: doc.Classes}
	card, err := readCardIn(dir)
	if err != nil {
		return false, err
	}
	out.Card = card
	return true, appendSection(dir, out)
}

// appendSection appends the black-box section of out to dir's report.md
// and report.html, and puts the run's headline (the verdict and the
// classes that failed, see Headline) in their first heading.
func appendSection(dir string, out *Outcome) error {
	var md strings.Builder
	WriteConformance(&md, out)
	if out.Card != nil {
		md.WriteString("\n")
		WriteCardMarkdown(&md, out.Card)
	}
	p := filepath.Join(dir, reports.MarkdownFile)
	page, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	text := string(page)
	if out.Verdict != "" {
		// The first line is reports' "## ICON idembench run: VERDICT".
		first, rest, _ := strings.Cut(text, "\n")
		if strings.Contains(first, "idembench run: ") {
			first = "## " + headlineIcons[out.Verdict] + " idembench run: " + Headline(out)
		}
		text = first + "\n" + rest
	}
	if err := os.WriteFile(p, []byte(text+"\n"+md.String()), 0o644); err != nil {
		return err
	}
	var html strings.Builder
	html.WriteString("<section><h2>Black-box target</h2>\n")
	writeConformanceHTML(&html, out)
	if out.Card != nil {
		writeCardHTML(&html, out.Card)
	}
	html.WriteString("</section>\n")
	p = filepath.Join(dir, reports.HTMLFile)
	if page, err = os.ReadFile(p); err != nil {
		return err
	}
	s := string(page)
	if out.Verdict != "" {
		if i := strings.Index(s, "idembench run: "); i >= 0 {
			if j := strings.Index(s[i:], "</h1>"); j >= 0 {
				s = s[:i] + "idembench run: " + htmlEscape(Headline(out)) + s[i+j:]
			}
		}
	}
	if i := strings.LastIndex(s, "</body>"); i >= 0 {
		s = s[:i] + html.String() + s[i:]
	} else {
		s += html.String()
	}
	return os.WriteFile(p, []byte(s), 0o644)
}

// writeConformanceHTML writes the black-box section as HTML: the oracle,
// the notes and the conformance table as a table.
func writeConformanceHTML(w io.Writer, out *Outcome) {
	fmt.Fprintf(w, "<p>Effects oracle: <b>%s</b>. %s</p>\n", htmlEscape(out.Oracle), htmlEscape(out.OracleLimits))
	if len(out.Notes) > 0 {
		fmt.Fprintln(w, "<ul>")
		for _, n := range out.Notes {
			fmt.Fprintf(w, "<li>%s</li>\n", htmlEscape(n))
		}
		fmt.Fprintln(w, "</ul>")
	}
	if len(out.Conformance) == 0 {
		fmt.Fprintln(w, "<p>Conformance probes were skipped.</p>")
		return
	}
	fmt.Fprintf(w, "<h3>Conformance (%s, profile %s)</h3>\n", Draft, htmlEscape(orIETF(out.Profile)))
	fmt.Fprintln(w, "<table><tr><th>probe</th><th>check id</th><th>section</th><th>expected</th><th>observed</th><th>result</th></tr>")
	for _, p := range out.Conformance {
		fmt.Fprintf(w, "<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			htmlEscape(p.Title), htmlEscape(p.ID), htmlEscape(strings.TrimPrefix(p.Section, Draft+" ")),
			htmlEscape(p.Expected), htmlEscape(p.Observed), htmlEscape(result(&p)))
	}
	fmt.Fprintln(w, "</table>")
}

// result is a probe's result cell: its status, level and class, and the
// target's reason for a declared deviation.
func result(p *ProbeResult) string {
	res := p.Status
	if p.Level != "" {
		res += " (" + p.Level + ", " + p.Class + ")"
	}
	if p.Reason != "" {
		res += " (declared: " + p.Reason + ")"
	}
	return res
}

func orIETF(profile string) string {
	if profile == "" {
		return ProfileIETF
	}
	return profile
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
	fmt.Fprintf(w, "### Conformance (%s, profile %s)\n\n", Draft, orIETF(out.Profile))
	fmt.Fprintf(w, "| probe | check id | section | expected | observed | result |\n|---|---|---|---|---|---|\n")
	for _, p := range out.Conformance {
		fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s | %s |\n", p.Title, p.ID, strings.TrimPrefix(p.Section, Draft+" "),
			cell(p.Expected), cell(p.Observed), cell(result(&p)))
	}
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
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

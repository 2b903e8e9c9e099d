package reports

import (
	"fmt"
	"io"
	"strings"
)

// MaxListedViolations caps the violations listed in report.md and
// report.html; summary.json has them all.
const MaxListedViolations = 50

// verdictIcons mark the verdict line of report.md.
var verdictIcons = map[string]string{
	"ok": "✅", "violation": "❌", "inconclusive": "⚠️", VerdictUnchecked: "➖",
}

// WriteMarkdown writes report.md for s: a verdict line, a table of the key
// figures, latency per outcome and (when there were faults) per phase, the
// invariants, the violations (at most MaxListedViolations, linked to their
// visualizations), thresholds, fault windows, notes, the replay command and
// the machine. It is sized for a GitHub job summary.
func WriteMarkdown(w io.Writer, s *Summary) error {
	var b strings.Builder
	icon := verdictIcons[s.Verdict]
	fmt.Fprintf(&b, "## %s idembench run: %s\n\n", icon, s.Verdict)
	fmt.Fprintf(&b, "%s\n\n", runLine(s))

	o := &s.Latency.Overall
	b.WriteString("| figure | value |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, mdCell(v)) }
	row("verdict", verdictText(s))
	row("calls", fmt.Sprintf("%s (%s completed, %s never returned)", count(s.Counts.Calls), count(s.Counts.Completed), count(s.Counts.Unmeasured)))
	row("throughput", fmt.Sprintf("%s ops/s (successes %s ops/s)", num(s.ThroughputPerS), num(s.SuccessPerS)))
	row("error rate", fmt.Sprintf("%s (%s calls)", percent(s.ErrorRate), count(s.Counts.Errors)))
	if o.Measured > 0 {
		row("latency p50 / p90 / p99 / p99.9 / max", fmt.Sprintf("%s / %s / %s / %s / %s ms", num(o.P50Ms), num(o.P90Ms), num(o.P99Ms), num(o.P999Ms), num(o.MaxMs)))
	} else {
		row("latency p50 / p90 / p99 / p99.9 / max", Unmeasured+" (no call returned)")
	}
	if s.LateSends.OpenLoopCalls > 0 {
		row(fmt.Sprintf("late sends (> %s ms)", num(s.LateSends.SlackMs)), fmt.Sprintf("%s of %s open-loop calls (at most %s ms late)",
			count(s.LateSends.Count), count(s.LateSends.OpenLoopCalls), num(s.LateSends.MaxDelayMs)))
	} else {
		row("late sends", "closed loop (no intended send times)")
	}
	row("fault windows", fmt.Sprintf("%d (%s s in total)", len(s.FaultWindows), num(faultSeconds(s))))
	row("probes / effects", fmt.Sprintf("%s / %s", count(s.Counts.Probes), count(s.Counts.Effects)))
	row("duration", num(s.DurationS)+" s")
	b.WriteString("\n")

	b.WriteString("### Latency by outcome (ms)\n\n")
	latencyTable(&b, "outcome", outcomeNames(), s.Latency.ByOutcome)
	if len(s.FaultWindows) > 0 {
		b.WriteString("### Latency by phase (ms)\n\n")
		latencyTable(&b, "phase", phaseNameList(), s.Latency.ByPhase)
	}
	if len(s.Invariants) > 0 {
		b.WriteString("### Invariants\n\n| invariant | checked | violations | inconclusive |\n|---|---:|---:|---:|\n")
		for _, ir := range s.Invariants {
			fmt.Fprintf(&b, "| %s %s | %s | %s | %s |\n", ir.ID, ir.Name, count(ir.Checked), count(ir.Violations), count(ir.Inconclusive))
		}
		b.WriteString("\n")
	}
	if n := s.ViolationCount(); n > 0 {
		fmt.Fprintf(&b, "### Violations (%s)\n\n", count(n))
		for i, v := range s.Violations {
			if i == MaxListedViolations {
				fmt.Fprintf(&b, "- … %s more in %s\n", count(n-i), SummaryFile)
				break
			}
			fmt.Fprintf(&b, "- **%s %s**, key %s: %s", v.Invariant, v.Name, mdCode(v.Key), mdText(v.Message))
			if v.Visualization != "" {
				fmt.Fprintf(&b, " ([visualization](%s))", v.Visualization)
			}
			b.WriteString("\n")
		}
		if len(s.Violations) < n && len(s.Violations) < MaxListedViolations {
			fmt.Fprintf(&b, "- … %s more not listed by the checker\n", count(n-len(s.Violations)))
		}
		b.WriteString("\n")
	}
	if t := s.Thresholds; t != nil {
		thresholdsMarkdown(&b, t)
	}
	if len(s.FaultWindows) > 0 {
		b.WriteString("### Fault windows\n\n| # | start (s) | end (s) | fault |\n|---:|---:|---:|---|\n")
		for i, fw := range s.FaultWindows {
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", i+1, num(fw.StartS), num(fw.EndS), mdCell(fw.Label))
		}
		b.WriteString("\n")
	}
	if len(s.Notes) > 0 {
		b.WriteString("### Notes\n\n")
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
		}
		b.WriteString("\n")
	}
	replay := s.ReplayCommand
	if replay == "" {
		replay = "(not recorded)"
	}
	fmt.Fprintf(&b, "Replay: %s  \nMachine: %s\n", mdCode(replay), mdText(s.Machine.String()))
	_, err := io.WriteString(w, b.String())
	return err
}

// runLine names the run: scenario, backend, engine, seed, tool.
func runLine(s *Summary) string {
	parts := []string{"scenario " + mdCode(orDash(s.Scenario)), "backend " + mdCode(orDash(s.Backend)),
		"engine " + mdCode(orDash(s.Engine)), fmt.Sprintf("seed %d", s.Seed)}
	if s.Tool != "" {
		parts = append(parts, mdText(s.Tool))
	}
	return strings.Join(parts, " · ")
}

// verdictText explains the verdict in a few words.
func verdictText(s *Summary) string {
	if s.Verdict == VerdictUnchecked {
		return "unchecked (the history was not checked)"
	}
	checked := 0
	for _, ir := range s.Invariants {
		if ir.Checked > 0 {
			checked++
		}
	}
	return fmt.Sprintf("%s (%d of %d invariants checked, %s violations)", s.Verdict, checked, len(s.Invariants), count(s.ViolationCount()))
}

// latencyTable writes one row per group with calls, in the given order.
func latencyTable(b *strings.Builder, what string, names []string, stats map[string]LatencyStats) {
	fmt.Fprintf(b, "| %s | calls | measured | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", what)
	rows := 0
	for _, n := range names {
		st, ok := stats[n]
		if !ok || st.Calls == 0 {
			continue
		}
		rows++
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", n, count(st.Calls), count(st.Measured),
			latNum(st.Measured, st.P50Ms), latNum(st.Measured, st.P90Ms), latNum(st.Measured, st.P99Ms),
			latNum(st.Measured, st.P999Ms), latNum(st.Measured, st.MaxMs))
	}
	if rows == 0 {
		fmt.Fprintf(b, "| (no calls) | 0 | 0 | - | - | - | - | - |\n")
	}
	b.WriteString("\n")
}

func thresholdsMarkdown(b *strings.Builder, t *ThresholdResult) {
	status := "all met"
	if !t.Passed {
		status = fmt.Sprintf("%d missed", len(t.Misses))
	}
	fmt.Fprintf(b, "### Thresholds: %s\n\n", status)
	var limits []string
	if t.MaxP99Ms > 0 {
		limits = append(limits, fmt.Sprintf("p99 ≤ %s ms", num(t.MaxP99Ms)))
	}
	if t.MinThroughputPerS > 0 {
		limits = append(limits, fmt.Sprintf("throughput ≥ %s ops/s", num(t.MinThroughputPerS)))
	}
	if t.MaxErrorRate > 0 {
		limits = append(limits, fmt.Sprintf("error rate ≤ %s", percent(t.MaxErrorRate)))
	}
	if len(limits) == 0 {
		limits = append(limits, "none set")
	}
	fmt.Fprintf(b, "Limits: %s.\n\n", strings.Join(limits, ", "))
	for _, m := range t.Misses {
		fmt.Fprintf(b, "- ❌ %s\n", mdText(m.Reason))
	}
	if len(t.Misses) > 0 {
		b.WriteString("\n")
	}
}

// Unmeasured stands in the reports for a latency figure of a group with
// no measured call (every call of it never returned, e.g. unknown): there
// is no value, which 0 would misstate.
const Unmeasured = "—"

// latNum formats a latency figure of a group with measured calls, and
// Unmeasured when it has none.
func latNum(measured int, ms float64) string {
	if measured == 0 {
		return Unmeasured
	}
	return num(ms)
}

func faultSeconds(s *Summary) float64 {
	total := 0.0
	for _, w := range s.FaultWindows {
		total += w.EndS - w.StartS
	}
	return total
}

func outcomeNames() []string {
	out := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		out[i] = o.String()
	}
	return out
}

func phaseNameList() []string {
	out := make([]string, len(Phases))
	for i, p := range Phases {
		out[i] = p.String()
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdCode writes s as a code span, widening the fence when s holds
// backticks and flattening newlines.
func mdCode(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || len(fence) > 1 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// mdText flattens newlines and escapes characters that would start markup
// inside a line.
func mdText(s string) string {
	r := strings.NewReplacer("\n", " ", "\r", " ", "|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "`", "\\`")
	return r.Replace(s)
}

// mdCell is mdText for a table cell.
func mdCell(s string) string { return mdText(s) }

package blackbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	_ "github.com/idembench/idembench/reports/plots" // the run directory holds the plots
)

// checkRunDir asserts that dir holds a complete run directory with the
// black-box section.
func checkRunDir(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{reports.HistoryFile, reports.SummaryFile, reports.MarkdownFile, reports.HTMLFile,
		reports.LatencyPlot + ".png", reports.ThroughputPlot + ".png", ConformanceFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("run directory: %s missing or empty (%v)", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, reports.MarkdownFile))
	for _, want := range []string{"## Black-box target", "Effects oracle: **downstream**", Draft, "profile cache-2xx-only",
		"| same key, different body | `different-body` | §2.7 |", "| 422 | pass |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if first, _, _ := strings.Cut(string(md), "\n"); !strings.HasSuffix(first, "idembench run: ok") {
		t.Errorf("report.md's first line %q, want the verdict ok", first)
	}
	// The conformance table is a table in report.html, not Markdown in a
	// <pre>.
	page, _ := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if !strings.Contains(string(page), "<td><code>different-body</code></td>") || strings.Contains(string(page), "| probe |") {
		t.Errorf("report.html does not render the conformance table as a table")
	}
	var c struct {
		Probes []ProbeResult `json:"probes"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, ConformanceFile))
	if err := json.Unmarshal(b, &c); err != nil || len(c.Probes) != len(ProbeIDs) {
		t.Errorf("conformance.json: %v, %d probes", err, len(c.Probes))
	}
	h, err := history.DecodeFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatalf("history.jsonl does not decode: %v", err)
	}
	if rep := checker.Check(h, checker.Options{}); rep.Verdict != checker.VerdictOK {
		t.Errorf("the saved history re-checks as %s: %v", rep.Verdict, rep.Notes)
	}
}

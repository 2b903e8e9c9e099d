package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/history"
)

// TestRegenerateSaysWhereTheVerdictCameFrom: a directory without
// summary.json is checked, and says so; it never claims the verdict was
// kept from a file that is not there.
func TestRegenerateSaysWhereTheVerdictCameFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeGoldenRun(t, dir)
	cases := []struct {
		name           string
		removeSummary  bool
		recheck        bool
		rechecked      bool
		missing        bool
		source, absent string
	}{
		{"kept", false, false, false, false, "verdict kept from summary.json", ""},
		{"re-checked", false, true, true, false, "re-checked", "kept"},
		{"no summary.json", true, false, true, true, "no summary.json", "kept"},
	}
	for _, c := range cases {
		if c.removeSummary {
			if err := os.Remove(filepath.Join(dir, SummaryFile)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := RegenerateRun(dir, RegenerateOptions{Recheck: c.recheck})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		src := r.VerdictSource()
		if r.Rechecked != c.rechecked || r.SummaryMissing != c.missing || !strings.Contains(src, c.source) ||
			(c.absent != "" && strings.Contains(src, c.absent)) {
			t.Errorf("%s: rechecked %v, missing %v, source %q", c.name, r.Rechecked, r.SummaryMissing, src)
		}
		if r.Summary == nil || r.Summary.Verdict != "violation" {
			t.Errorf("%s: summary %+v", c.name, r.Summary)
		}
	}
}

// TestUnmeasuredRowsShowDash: a group whose calls never returned shows
// "—" for its latency figures in report.md and report.html, not 0.
func TestUnmeasuredRowsShowDash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeGoldenRun(t, dir)
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| unknown | 1 | 0 | — | — | — | — | — |") {
		t.Errorf("report.md unknown row:\n%s", md)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	want := `<tr><td>unknown</td><td class="n">1</td><td class="n">0</td><td class="n">—</td>`
	if !strings.Contains(string(page), want) {
		t.Errorf("report.html has no unknown row with dashes")
	}
}

// TestHTMLHeadingNeedsNoEmojiFont: the verdict heading of report.html is
// plain text with an inline SVG mark for every verdict, no emoji.
func TestHTMLHeadingNeedsNoEmojiFont(t *testing.T) {
	t.Parallel()
	for _, verdict := range []string{"ok", "violation", "inconclusive", VerdictUnchecked} {
		var b strings.Builder
		if err := writeHTML(&b, &Summary{Verdict: verdict}, nil); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		i, j := strings.Index(page, "<h1"), strings.Index(page, "</h1>")
		if i < 0 || j < i {
			t.Fatalf("%s: no heading", verdict)
		}
		h1 := page[i:j]
		if !strings.Contains(h1, "<svg") || !strings.Contains(h1, "idembench run: "+verdict) {
			t.Errorf("%s: heading %q lacks its SVG mark or text", verdict, h1)
		}
		for _, r := range h1 {
			if r >= 0x2190 { // arrows, dingbats, emoji and their variation selectors
				t.Errorf("%s: heading holds %q (U+%04X), which needs a symbol font", verdict, r, r)
			}
		}
	}
}

// TestTrafficEnd: the drain starts at the first call plus the recorded
// duration, or, without one, at the last first attempt's start.
func TestTrafficEnd(t *testing.T) {
	ms := func(v float64) int64 { return int64(v * 1e6) }
	call := func(start, end float64, attempt int) history.Op {
		return history.Op{Kind: history.KindCall, Key: "k", Attempt: attempt, Call: ms(start), Return: ms(end), Outcome: history.Executed}
	}
	ops := []history.Op{call(1000, 1001, 1), call(1500, 1600, 1), call(2100, 2300, 2), call(2200, 3000, 3)}
	cases := []struct {
		name    string
		options map[string]string
		want    float64
	}{
		{"recorded duration", map[string]string{"duration": "1.2s"}, 1.2},
		{"no duration: last first attempt", nil, 0.5},
		{"duration past the end", map[string]string{"duration": "1h"}, 2},
	}
	for _, c := range cases {
		m := Measure(&history.History{Header: history.Header{Options: c.options}, Ops: ops}, MeasureOptions{})
		if d := m.TrafficEndS - c.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: traffic end %g s, want %g", c.name, m.TrafficEndS, c.want)
		}
	}
}

// TestCompareUnmeasuredRun: a run without a measured call shows "—" in
// the comparison's latency cells, and a measured one its figures.
func TestCompareUnmeasuredRun(t *testing.T) {
	t.Parallel()
	c := Compare([]Run{
		{Label: "silent", Summary: &Summary{Verdict: "ok"}},
		{Label: "busy", Summary: &Summary{Verdict: "ok", Latency: LatencySummary{Overall: LatencyStats{Calls: 1, Measured: 1, P50Ms: 2, P99Ms: 3, P999Ms: 3, MaxMs: 3}}}},
	})
	silent, busy := c.Rows[0].cells(), c.Rows[1].cells()
	if got := strings.Join(silent[6:], " "); got != "— — — —" {
		t.Errorf("unmeasured run's latency cells %q", got)
	}
	if got := strings.Join(busy[6:], " "); got != "2 3 3 3" {
		t.Errorf("measured run's latency cells %q", got)
	}
}

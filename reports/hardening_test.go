package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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

// TestLabelRows: labels that would overlap go on a lower row; a label
// that fits on no row is left out; nothing overlaps on a row.
func TestLabelRows(t *testing.T) {
	box := func(x, w float64) textBox { return textBox{x: vg.Length(x), w: vg.Length(w)} }
	cases := []struct {
		name   string
		labels []textBox
		rows   int
		want   []int
	}{
		{"apart", []textBox{box(0, 5), box(10, 5), box(20, 5)}, 4, []int{0, 0, 0}},
		{"three at once", []textBox{box(0, 5), box(1, 5), box(2, 5)}, 4, []int{0, 1, 2}},
		{"back to the top", []textBox{box(0, 5), box(1, 5), box(9, 5)}, 4, []int{0, 1, 0}},
		{"out of rows", []textBox{box(0, 5), box(1, 5), box(2, 5)}, 2, []int{0, 1, -1}},
		{"touching needs the gap", []textBox{box(0, 5), box(6, 5)}, 4, []int{0, 1}},
	}
	for _, c := range cases {
		got := labelRows(c.labels, 2, c.rows)
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s: rows %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// TestStepsEndAtTimeline: a step series ends at xMax, changes between two
// adjacent buckets at their boundary, and a bucket past xMax adds no step.
func TestStepsEndAtTimeline(t *testing.T) {
	xys := plotter.XYs{{X: 0.5, Y: 1}, {X: 1.5, Y: 2}, {X: 2.5, Y: 3}}
	got := stepXYs(xys, 1, 2.2)
	want := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 2}, {X: 2, Y: 3}, {X: 2.2, Y: 3}}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps %v, want %v", got, want)
		}
	}
	if got := stepXYs(xys, 1, 1.7); got[len(got)-1] != (plotter.XY{X: 1.7, Y: 2}) {
		t.Fatalf("cut in the second bucket: %v", got)
	}
	if got := stepXYs(xys, 1, 0); got[len(got)-1].X != 3 {
		t.Fatalf("no end: %v", got)
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

// TestDrainIsShadedAndLabelled: both timeline plots of a run with a drain
// carry the drain's legend entry; a run whose traffic ends with its last
// call has none.
func TestDrainIsShadedAndLabelled(t *testing.T) {
	t.Parallel()
	h := closedLoop(200, func(i int) time.Duration { return time.Millisecond })
	h.Header.Options = map[string]string{"duration": "100ms"}
	m := Measure(h, MeasureOptions{})
	if m.TrafficEndS <= 0 || m.TrafficEndS >= m.spanS() {
		t.Fatalf("traffic end %g, span %g: no drain in the fixture", m.TrafficEndS, m.spanS())
	}
	for name, fig := range map[string]func(*Measurement) *figure{"throughput": throughputFigure, "latency over time": latencyOverTimeFigure} {
		f := fig(m)
		if !hasLegend(f, "drain: no new requests") {
			t.Errorf("%s: no drain legend entry", name)
		}
		if f.p.X.Max != m.spanS() {
			t.Errorf("%s: x axis ends at %g, want the timeline's end %g", name, f.p.X.Max, m.spanS())
		}
	}
	h.Header.Options = nil
	m = Measure(h, MeasureOptions{})
	if f := latencyOverTimeFigure(m); hasLegend(f, "drain") != (m.TrafficEndS < m.spanS()) {
		t.Errorf("drain legend %v with traffic end %g of %g", hasLegend(f, "drain"), m.TrafficEndS, m.spanS())
	}
}

// hasLegend reports whether f, rendered as SVG, writes text.
func hasLegend(f *figure, text string) bool {
	b, err := f.render("svg")
	return err == nil && strings.Contains(string(b), text)
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

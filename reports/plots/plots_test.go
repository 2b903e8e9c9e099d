package plots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// closedLoop returns n calls on one key, one a millisecond apart, the
// i-th taking lat(i).
func closedLoop(n int, lat func(i int) time.Duration) *history.History {
	const base = int64(1_000_000_000)
	h := &history.History{}
	for i := 1; i <= n; i++ {
		call := base + int64(i)*int64(time.Millisecond)
		h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Client: i % 8, Key: "k", Call: call,
			Return: call + int64(lat(i)), Outcome: history.Replayed, Resp: "r"})
	}
	return h
}

// TestRegistered: importing the package makes its Plotter the reports',
// and a run report then holds every plot, embedded in report.html.
func TestRegistered(t *testing.T) {
	t.Parallel()
	if _, ok := reports.RegisteredPlotter().(Plotter); !ok {
		t.Fatalf("registered Plotter %T, want plots.Plotter", reports.RegisteredPlotter())
	}
	dir := t.TempDir()
	h := closedLoop(500, func(i int) time.Duration { return time.Duration(i%50+1) * 100 * time.Microsecond })
	if _, err := reports.WriteRunReport(dir, h, checker.Report{}, reports.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{reports.LatencyPlot + ".png", reports.LatencyPlot + ".svg", reports.ThroughputPlot + ".png",
		reports.ThroughputPlot + ".svg", reports.LatencyOverTimePlot + ".png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<img src="data:image/png;base64,`); n != 3 {
		t.Errorf("%d embedded PNG plots, want 3", n)
	}
}

// TestEmptyHistories: a run without calls still draws every plot (a
// "no data" message).
func TestEmptyHistories(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]*history.History{"nil": nil, "empty": {}, "faults only": {Ops: []history.Op{
		{Kind: history.KindFault, Client: -1, Call: 5, Return: history.NoReturn},
	}}} {
		m := reports.Measure(h, reports.MeasureOptions{})
		for _, f := range []*figure{latencyFigure(m), throughputFigure(m), latencyOverTimeFigure(m)} {
			// SVG draws the same plot as PNG, many times faster under -race.
			if _, err := f.render("svg"); err != nil {
				t.Errorf("%s: render: %v", name, err)
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

// TestDrainIsShadedAndLabelled: both timeline plots of a run with a drain
// carry the drain's legend entry; a run whose traffic ends with its last
// call has none.
func TestDrainIsShadedAndLabelled(t *testing.T) {
	t.Parallel()
	h := closedLoop(200, func(i int) time.Duration { return time.Millisecond })
	h.Header.Options = map[string]string{"duration": "100ms"}
	m := reports.Measure(h, reports.MeasureOptions{})
	if m.TrafficEndS <= 0 || m.TrafficEndS >= spanS(m) {
		t.Fatalf("traffic end %g, span %g: no drain in the fixture", m.TrafficEndS, spanS(m))
	}
	for name, fig := range map[string]func(*reports.Measurement) *figure{"throughput": throughputFigure, "latency over time": latencyOverTimeFigure} {
		f := fig(m)
		if !hasLegend(f, "drain: no new requests") {
			t.Errorf("%s: no drain legend entry", name)
		}
		if f.p.X.Max != spanS(m) {
			t.Errorf("%s: x axis ends at %g, want the timeline's end %g", name, f.p.X.Max, spanS(m))
		}
	}
	h.Header.Options = nil
	m = reports.Measure(h, reports.MeasureOptions{})
	if f := latencyOverTimeFigure(m); hasLegend(f, "drain") != (m.TrafficEndS < spanS(m)) {
		t.Errorf("drain legend %v with traffic end %g of %g", hasLegend(f, "drain"), m.TrafficEndS, spanS(m))
	}
}

// hasLegend reports whether f, rendered as SVG, writes text.
func hasLegend(f *figure, text string) bool {
	b, err := f.render("svg")
	return err == nil && strings.Contains(string(b), text)
}

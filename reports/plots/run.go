package plots

import (
	"image/color"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
)

// outcomeColors gives every outcome the same color in every plot.
var outcomeColors = map[history.Outcome]color.Color{
	history.Executed:   color.RGBA{31, 119, 180, 255},  // blue
	history.Replayed:   color.RGBA{44, 160, 44, 255},   // green
	history.Failed:     color.RGBA{140, 86, 75, 255},   // brown
	history.InProgress: color.RGBA{255, 127, 14, 255},  // orange
	history.Mismatch:   color.RGBA{148, 103, 189, 255}, // purple
	history.Released:   color.RGBA{23, 190, 207, 255},  // cyan
	history.LeaseLost:  color.RGBA{227, 119, 194, 255}, // pink
	history.Unknown:    color.RGBA{127, 127, 127, 255}, // gray
	history.Error:      color.RGBA{214, 39, 40, 255},   // red
}

var (
	black    = color.Black
	errorRed = color.RGBA{214, 39, 40, 255}
	p50Blue  = color.RGBA{31, 119, 180, 255}
	p99Amber = color.RGBA{255, 127, 14, 255}
	dotGray  = color.NRGBA{90, 90, 90, 70}
)

// windowsOf returns the fault windows in seconds since the origin.
func windowsOf(m *reports.Measurement) [][2]float64 {
	out := make([][2]float64, len(m.Windows))
	for i, w := range m.Windows {
		out[i] = [2]float64{w.StartS, w.EndS}
	}
	return out
}

// latencyFigure is the percentile spectrum: latency (ms, log) against the
// percentile on the nines axis, overall and per outcome.
func latencyFigure(m *reports.Measurement) *figure {
	f := newFigure(runTitle("Latency by percentile", m), "percentile (nines scale)", "latency (ms, log scale)")
	ninesAxis(&f.p.X)
	if m.Overall.Measured() == 0 {
		f.noData("no call returned: no latency to plot")
		return f
	}
	var lines []*reports.Latency
	for _, o := range reports.Outcomes {
		if m.ByOutcome(o).Measured() > 0 {
			lines = append(lines, m.ByOutcome(o))
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, l := range append(lines, &m.Overall) {
		for _, p := range l.Spectrum() {
			if p.Ms > 0 {
				lo = min(lo, p.Ms)
			}
			hi = max(hi, p.Ms)
		}
	}
	lo, hi = positiveRange(lo, hi)
	logAxis(&f.p.Y, lo, hi)
	overall := f.addLine("all calls ("+reports.FormatCount(m.Overall.Measured())+")", spectrumXYs(m.Overall.Spectrum(), lo), black, vg.Points(2.5), false)
	if len(lines) > 1 {
		for _, o := range reports.Outcomes {
			if l := m.ByOutcome(o); l.Measured() > 0 {
				f.addLine(o.String()+" ("+reports.FormatCount(l.Measured())+")", spectrumXYs(l.Spectrum(), lo), outcomeColors[o], vg.Points(1.5), false)
			}
		}
		if overall != nil {
			f.p.Add(overall) // draw the overall line again, on top
		}
	}
	return f
}

// spectrumXYs maps a spectrum onto the nines axis, raising values below
// floor to it (a log axis cannot show 0).
func spectrumXYs(sp []reports.SpectrumPoint, floor float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(sp))
	for _, p := range sp {
		if p.Percentile >= 100 {
			continue
		}
		xys = append(xys, plotter.XY{X: reports.Nines(p.Percentile), Y: max(p.Ms, floor)})
	}
	return xys
}

// positiveRange returns a usable log range: lo defaults to hi/10 (or 1 µs)
// when no value is positive.
func positiveRange(lo, hi float64) (float64, float64) {
	if math.IsInf(lo, 1) || lo <= 0 {
		lo = 0.001
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// throughputFigure plots completed calls and errors per second over time,
// with the fault windows shaded.
func throughputFigure(m *reports.Measurement) *figure {
	f := newFigure(runTitle("Throughput over time", m), "time since start (s)", "calls per second (ops/s)")
	tl := &m.Timeline
	if tl.Len() == 0 {
		f.noData("no calls")
		return f
	}
	f.addFaults(windowsOf(m))
	f.addDrain(m.TrafficEndS, spanS(m))
	completed, errors := rateXYs(tl.Completed, tl.Bucket.Seconds(), spanS(m)), rateXYs(tl.Errors, tl.Bucket.Seconds(), spanS(m))
	zeroBasedAxis(&f.p.Y, maxY(completed))
	f.p.X.Min, f.p.X.Max = 0, spanS(m)
	f.addSteps("completed", completed, tl.Bucket.Seconds(), p50Blue, vg.Points(1.8), false)
	f.addSteps("errors", errors, tl.Bucket.Seconds(), errorRed, vg.Points(1.5), false)
	f.p.X.Min, f.p.X.Max = 0, spanS(m)
	return f
}

// spanS is the length of the timeline in seconds: from the origin to the
// end of the last call or fault.
func spanS(m *reports.Measurement) float64 { return m.Timeline.Span.Seconds() }

// rateXYs turns per-bucket counts into per-second rates at bucket
// midpoints, dropping a last bucket that covers less than half its width
// (its rate would read low).
func rateXYs(counts []int, bucketS, spanS float64) plotter.XYs {
	n := len(counts)
	if n > 1 && spanS-float64(n-1)*bucketS < bucketS/2 {
		n--
	}
	xys := make(plotter.XYs, n)
	for i := range n {
		xys[i] = plotter.XY{X: (float64(i) + 0.5) * bucketS, Y: float64(counts[i]) / bucketS}
	}
	return xys
}

// latencyOverTimeFigure plots a sample of individual latencies and the
// per-bucket p50, p99 and max against the time each call started.
func latencyOverTimeFigure(m *reports.Measurement) *figure {
	f := newFigure(runTitle("Latency over time", m), "time since start (s)", "latency (ms, log scale)")
	tl := &m.Timeline
	if m.Overall.Measured() == 0 {
		f.noData("no call returned: no latency to plot")
		return f
	}
	lo, hi := math.Inf(1), 0.0
	for _, p := range m.Scatter {
		if v := ms(p.Latency); v > 0 {
			lo = min(lo, v)
		}
	}
	for i := range tl.Measured {
		if tl.Measured[i] > 0 && tl.P50[i] > 0 {
			lo = min(lo, ms(tl.P50[i]))
		}
		hi = max(hi, ms(tl.Max[i]))
	}
	lo, hi = positiveRange(lo, hi)
	logAxis(&f.p.Y, lo, hi)
	f.p.X.Min, f.p.X.Max = 0, spanS(m)
	f.addFaults(windowsOf(m))
	f.addDrain(m.TrafficEndS, spanS(m))

	dots := make(plotter.XYs, len(m.Scatter))
	for i, p := range m.Scatter {
		dots[i] = plotter.XY{X: p.T, Y: max(ms(p.Latency), lo)}
	}
	if len(dots) > 0 {
		if sc, err := plotter.NewScatter(dots); err == nil {
			sc.GlyphStyle = draw.GlyphStyle{Color: dotGray, Radius: vg.Points(1), Shape: draw.CircleGlyph{}}
			f.p.Add(sc)
			f.legend.Add("sampled calls ("+reports.FormatCount(len(dots))+")", dotThumb{})
		}
	}
	f.addSteps("p50 per "+bucketName(tl), bucketXYs(tl, tl.P50, lo), tl.Bucket.Seconds(), p50Blue, vg.Points(1.5), false)
	f.addSteps("p99 per "+bucketName(tl), bucketXYs(tl, tl.P99, lo), tl.Bucket.Seconds(), p99Amber, vg.Points(1.5), false)
	f.addSteps("max per "+bucketName(tl), bucketXYs(tl, tl.Max, lo), tl.Bucket.Seconds(), errorRed, vg.Points(1), true)
	f.p.X.Min, f.p.X.Max = 0, spanS(m)
	return f
}

// runTitle appends the run's scenario, backend and seed to a plot title.
func runTitle(title string, m *reports.Measurement) string {
	hd := &m.Header
	var parts []string
	for _, p := range []string{hd.Scenario, hd.Backend} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 && hd.Seed == 0 {
		return title
	}
	t := title + " — " + strings.Join(append(parts, "seed "+strconv.FormatInt(hd.Seed, 10)), ", ")
	if r := []rune(t); len(r) > 100 {
		t = string(r[:99]) + "…"
	}
	return t
}

// dotThumb is the legend mark of the sampled calls: a larger dot than the
// ones plotted, so it can be seen.
type dotThumb struct{}

// Thumbnail implements plot.Thumbnailer.
func (dotThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: color.NRGBA{90, 90, 90, 160}, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}, c.Center())
}

// maxY returns the largest Y of xys, 0 when empty.
func maxY(xys plotter.XYs) float64 {
	m := 0.0
	for _, p := range xys {
		m = max(m, p.Y)
	}
	return m
}

// bucketName returns "s" for one-second buckets, else "5 s".
func bucketName(tl *reports.Timeline) string {
	if s := tl.Bucket.Seconds(); s != 1 {
		return reports.FormatNumber(s) + " s"
	}
	return "s"
}

// bucketXYs returns the per-bucket values at bucket midpoints, skipping
// buckets without measured calls.
func bucketXYs(tl *reports.Timeline, vals []time.Duration, floor float64) plotter.XYs {
	w := tl.Bucket.Seconds()
	var xys plotter.XYs
	for i, d := range vals {
		if tl.Measured[i] == 0 {
			continue
		}
		xys = append(xys, plotter.XY{X: (float64(i) + 0.5) * w, Y: max(ms(d), floor)})
	}
	return xys
}

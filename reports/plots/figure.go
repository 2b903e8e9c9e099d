package plots

import (
	"bytes"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/idembench/idembench/reports"
)

// Plot geometry: 10 × 5 inches, PNGs at 110 dpi (1100 × 550 px).
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 5 * vg.Inch
	plotDPI    = 110
)

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// figure is a plot with its legend drawn in a column to the right of the
// axes, so the legend never hides data.
type figure struct {
	p      *plot.Plot
	legend plot.Legend
	// xMax, when positive, is where step series end: the last bucket
	// of a timeline is cut at the timeline's end instead of drawn whole.
	xMax float64
}

// newFigure returns a figure with a title, axis labels, a light grid and
// sans-serif text.
func newFigure(title, xLabel, yLabel string) *figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 14)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 12)
		a.Tick.Label.Font = font.From(sans, 10)
		a.Padding = 0
	}
	p.X.Tick.Marker = linearTicks{}
	p.Y.Tick.Marker = linearTicks{}
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 225}
	grid.Horizontal.Color = color.Gray{Y: 225}
	p.Add(grid)
	f := &figure{p: p, legend: plot.NewLegend()}
	f.legend.TextStyle.Font = font.From(sans, 10)
	f.legend.Top = true
	f.legend.Left = true
	f.legend.Padding = vg.Points(3)
	return f
}

// render draws f in format "png" or "svg".
func (f *figure) render(format string) ([]byte, error) {
	var buf bytes.Buffer
	switch format {
	case "svg":
		cv := vgsvg.NewWith(vgsvg.UseWH(plotWidth, plotHeight))
		f.draw(draw.New(cv))
		if _, err := cv.WriteTo(&buf); err != nil {
			return nil, err
		}
	default:
		cv := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
		f.draw(draw.New(cv))
		if _, err := (vgimg.PngCanvas{Canvas: cv}).WriteTo(&buf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// draw lays out the plot and, when it has entries, the legend column.
func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	margin := vg.Points(10)
	c = draw.Crop(c, margin, -margin, margin, -margin)
	r := f.legend.Rectangle(c)
	if w := r.Max.X - r.Min.X; w > 0 {
		lc := draw.Crop(c, c.Max.X-c.Min.X-w, 0, 0, 0)
		// Align the legend's top with the top of the axes, below the title.
		lc.Max.Y -= f.p.Title.TextStyle.Rectangle(f.p.Title.Text).Size().Y + f.p.Title.Padding
		f.legend.Draw(lc)
		c = draw.Crop(c, 0, -(w + margin), 0, 0)
	}
	f.p.Draw(c)
}

// addSteps adds a per-bucket series (points at the midpoints of buckets
// width wide) drawn as steps that change halfway between two points (at the
// bucket boundary when the buckets are adjacent) and span the first and
// last buckets whole, up to f.xMax when it is set. The steps are built as
// an explicit polyline: a step line that the canvas clips at the axis would
// move its last step.
func (f *figure) addSteps(name string, xys plotter.XYs, width float64, clr color.Color, lw vg.Length, dashed bool) {
	f.addLine(name, stepXYs(xys, width, f.xMax), clr, lw, dashed)
}

// stepXYs returns the polyline of addSteps; xMax <= 0 means no end.
func stepXYs(xys plotter.XYs, width, xMax float64) plotter.XYs {
	if len(xys) == 0 {
		return nil
	}
	clip := func(x float64) float64 {
		if xMax > 0 {
			return min(x, xMax)
		}
		return x
	}
	out := make(plotter.XYs, 0, 2*len(xys)+2)
	out = append(out, plotter.XY{X: clip(xys[0].X - width/2), Y: xys[0].Y})
	for i := 1; i < len(xys); i++ {
		a, b := xys[i-1], xys[i]
		mid := (a.X + b.X) / 2
		if xMax > 0 && mid >= xMax {
			break
		}
		out = append(out, plotter.XY{X: mid, Y: a.Y}, plotter.XY{X: mid, Y: b.Y})
	}
	last := out[len(out)-1]
	end := clip(xys[len(xys)-1].X + width/2)
	if end > last.X {
		out = append(out, plotter.XY{X: end, Y: last.Y})
	}
	return out
}

// addLine adds a line to the plot and the legend and returns it; empty or
// non-finite data adds nothing and returns nil.
func (f *figure) addLine(name string, xys plotter.XYs, clr color.Color, width vg.Length, dashed bool) *plotter.Line {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil
	}
	l.Color = clr
	l.Width = width
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	f.p.Add(l)
	if name != "" {
		f.legend.Add(name, l)
	}
	return l
}

// noData writes a message in the middle of an empty plot.
func (f *figure) noData(msg string) {
	f.p.X.Min, f.p.X.Max = 0, 1
	f.p.Y.Min, f.p.Y.Max = 0, 1
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}}, Labels: []string{msg}})
	if err != nil {
		return
	}
	l.TextStyle[0].Font = font.From(sans, 14)
	l.TextStyle[0].XAlign = draw.XCenter
	l.TextStyle[0].YAlign = draw.YCenter
	f.p.Add(l)
}

// logAxis makes ax a log axis spanning [lo, hi] (both > 0), widened to
// 1-2-5 values, or to powers of ten past three decades, so the ends carry
// labels.
func logAxis(ax *plot.Axis, lo, hi float64) {
	ax.Scale = plot.LogScale{}
	ax.Tick.Marker = logTicks{}
	// Keep the data off the frame; past three decades only decades are
	// labelled, so end on decades.
	ax.Min, ax.Max = niceFloor(lo*0.8), niceCeil(hi*1.25)
	if math.Log10(ax.Max/ax.Min) > 3 {
		ax.Min = math.Pow(10, math.Floor(math.Log10(ax.Min)+1e-9))
		ax.Max = math.Pow(10, math.Ceil(math.Log10(ax.Max)-1e-9))
	}
}

// logTicks marks 1..9 × 10^k and labels 1, 2 and 5 × 10^k, or only the
// powers of ten when the axis spans more than three decades.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	sparse := math.Log10(hi/lo) > 3
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!sparse && (m == 2 || m == 5)) {
				t.Label = reports.FormatNumber(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// zeroBasedAxis makes ax run from 0 to a little above hi, ending on a
// labelled tick of linearTicks.
func zeroBasedAxis(ax *plot.Axis, hi float64) {
	ax.Min, ax.Max = 0, 1
	if hi > 0 {
		hi *= 1.05
		step := niceCeil(hi / 10)
		ax.Max = math.Ceil(hi/step-1e-9) * step
	}
}

// linearTicks labels about ten round values (1, 2 or 5 × 10^k apart) with
// unlabelled minor ticks between them.
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: reports.FormatNumber(lo)}}
	}
	step := niceCeil((hi - lo) / 10)
	minors := 5.0
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); math.Abs(m-2) < 1e-9 {
		minors = 4
	}
	minor := step / minors
	var ticks []plot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+minor*1e-9; k++ {
		t := plot.Tick{Value: k * minor}
		if math.Mod(k, minors) == 0 {
			t.Label = reports.FormatNumber(t.Value)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// niceFloor returns the largest 1, 2 or 5 × 10^k at or below x (> 0).
func niceFloor(x float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= x*(1+1e-9) {
			return m * e
		}
	}
	return e
}

// niceCeil returns the smallest 1, 2 or 5 × 10^k at or above x (> 0).
func niceCeil(x float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= x*(1-1e-9) {
			return m * e
		}
	}
	return 10 * e
}

var ninesLabels = [reports.MaxNines + 1]string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}

// ninesAxis makes ax the percentile axis: linear in Nines, from 0% to
// 99.999%, labelled in percent.
func ninesAxis(ax *plot.Axis) {
	ax.Min, ax.Max = 0, reports.MaxNines
	var ticks plot.ConstantTicks
	for n := 0; n <= reports.MaxNines; n++ {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: ninesLabels[n]})
		if n < reports.MaxNines {
			for _, frac := range []float64{0.5, 0.75} { // 50%, 75% of the next nine
				ticks = append(ticks, plot.Tick{Value: float64(n) + reports.Nines(frac*100)})
			}
		}
	}
	ax.Tick.Marker = ticks
}

package reports

import (
	"bytes"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
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
// width wide) drawn as steps that change at bucket boundaries and span the
// first and last buckets whole.
func (f *figure) addSteps(name string, xys plotter.XYs, width float64, clr color.Color, lw vg.Length, dashed bool) {
	if len(xys) > 0 {
		first, last := xys[0], xys[len(xys)-1]
		edged := make(plotter.XYs, 0, len(xys)+2)
		edged = append(edged, plotter.XY{X: first.X - width/2, Y: first.Y})
		edged = append(edged, xys...)
		xys = append(edged, plotter.XY{X: last.X + width/2, Y: last.Y})
	}
	if l := f.addLine(name, xys, clr, lw, dashed); l != nil {
		l.StepStyle = plotter.MidStep
	}
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

// faultShade is a plotter that shades fault windows over the full height
// of the data area. Windows narrower than 2 points (instant faults such as
// a crash) are drawn 2 points wide so they stay visible.
type faultShade struct {
	windows [][2]float64 // start, end in data x units
}

var faultColor = color.NRGBA{R: 230, G: 85, B: 13, A: 48}

// Plot implements plot.Plotter.
func (s faultShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for i, w := range s.windows {
		x0, x1 := trX(w[0]), trX(w[1])
		if d := vg.Points(2) - (x1 - x0); d > 0 {
			x0, x1 = x0-d/2, x1+d/2
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(faultColor, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		if len(s.windows) <= maxNumberedWindows {
			sty := draw.TextStyle{Color: faultText, Font: font.From(sans, 9), XAlign: draw.XLeft, YAlign: draw.YTop, Handler: p.TextHandler}
			c.FillText(sty, vg.Point{X: x0 + vg.Points(2), Y: c.Max.Y - vg.Points(2)}, strconv.Itoa(i+1))
		}
	}
}

// maxNumberedWindows is the most fault windows whose numbers (matching the
// reports' fault window tables) are written in the plots.
const maxNumberedWindows = 20

var faultText = color.NRGBA{R: 166, G: 54, B: 3, A: 255}

// Thumbnail implements plot.Thumbnailer.
func (s faultShade) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(faultColor, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// addFaults shades the windows (given in seconds) and adds a legend entry.
// It must be called before the data is added so data draws on top.
func (f *figure) addFaults(windows [][2]float64) {
	if len(windows) == 0 {
		return
	}
	s := faultShade{windows: windows}
	f.p.Add(s)
	f.legend.Add("fault window", s)
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
				t.Label = num(v)
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
		return []plot.Tick{{Value: lo, Label: num(lo)}}
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
			t.Label = num(t.Value)
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

var ninesLabels = [MaxNines + 1]string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}

// ninesAxis makes ax the percentile axis: linear in Nines, from 0% to
// 99.999%, labelled in percent.
func ninesAxis(ax *plot.Axis) {
	ax.Min, ax.Max = 0, MaxNines
	var ticks plot.ConstantTicks
	for n := 0; n <= MaxNines; n++ {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: ninesLabels[n]})
		if n < MaxNines {
			for _, frac := range []float64{0.5, 0.75} { // 50%, 75% of the next nine
				ticks = append(ticks, plot.Tick{Value: float64(n) + Nines(frac*100)})
			}
		}
	}
	ax.Tick.Marker = ticks
}

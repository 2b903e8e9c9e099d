package plots

import (
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
	sty := draw.TextStyle{Color: faultText, Font: font.From(sans, 9), XAlign: draw.XLeft, YAlign: draw.YTop, Handler: p.TextHandler}
	var labels []textBox
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
			txt := strconv.Itoa(i + 1)
			labels = append(labels, textBox{text: txt, x: x0 + vg.Points(2), w: sty.Width(txt)})
		}
	}
	rowH := sty.Height("0") + vg.Points(1)
	for i, row := range labelRows(labels, vg.Points(3), maxLabelRows) {
		if row < 0 {
			continue
		}
		y := c.Max.Y - vg.Points(2) - vg.Length(row)*rowH
		c.FillText(sty, vg.Point{X: labels[i].x, Y: y}, labels[i].text)
	}
}

// textBox is a label to place on a row: its text, left edge and width.
type textBox struct {
	text string
	x, w vg.Length
}

// maxLabelRows is how many rows of fault window numbers a plot stacks
// before it leaves a number out.
const maxLabelRows = 4

// labelRows lays out labels sorted by x: each goes on the first of rows
// rows where it starts at least gap after the end of the label before it
// on that row, so no two labels overlap. It returns each label's row, or
// -1 for a label that fits on no row.
func labelRows(labels []textBox, gap vg.Length, rows int) []int {
	out := make([]int, len(labels))
	ends := make([]vg.Length, 0, rows)
	for i, l := range labels {
		out[i] = -1
		for r := range rows {
			if r == len(ends) {
				ends = append(ends, l.x+l.w)
				out[i] = r
				break
			}
			if l.x >= ends[r]+gap {
				ends[r] = l.x + l.w
				out[i] = r
				break
			}
		}
	}
	return out
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

// drainShade is a plotter that shades the drain phase, from the end of
// the traffic to the end of the timeline, over the full height of the data
// area, and writes "drain" at its foot when it is wide enough.
type drainShade struct{ from, to float64 }

var (
	drainColor = color.NRGBA{R: 110, G: 110, B: 130, A: 40}
	drainText  = color.NRGBA{R: 80, G: 80, B: 100, A: 255}
	drainLine  = color.NRGBA{R: 90, G: 90, B: 110, A: 110}
)

// Plot implements plot.Plotter.
func (s drainShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(s.from), trX(s.to)
	if d := vg.Points(2) - (x1 - x0); d > 0 {
		x0 = x1 - vg.Points(2)
	}
	x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
	if x1 <= x0 {
		return
	}
	c.FillPolygon(drainColor, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	hatch(&c, x0, x1, c.Min.Y, c.Max.Y)
	sty := draw.TextStyle{Color: drainText, Font: font.From(sans, 9), XAlign: draw.XLeft, YAlign: draw.YBottom, Handler: p.TextHandler}
	if sty.Width("drain")+vg.Points(4) <= x1-x0 {
		c.FillText(sty, vg.Point{X: x0 + vg.Points(2), Y: c.Min.Y + vg.Points(2)}, "drain")
	}
}

// Thumbnail implements plot.Thumbnailer.
func (s drainShade) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(drainColor, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
	hatch(c, c.Min.X, c.Max.X, c.Min.Y, c.Max.Y)
}

// hatch strokes 45° lines 6 points apart across the rectangle [x0, x1] ×
// [y0, y1], so the drain reads apart from the fault windows it may overlap.
func hatch(c *draw.Canvas, x0, x1, y0, y1 vg.Length) {
	c.SetLineStyle(draw.LineStyle{Color: drainLine, Width: vg.Points(0.6)})
	h := y1 - y0
	for k := x0 - h; k < x1; k += vg.Points(6) {
		t0, t1 := max(0, x0-k), min(h, x1-k)
		if t0 >= t1 {
			continue
		}
		var p vg.Path
		p.Move(vg.Point{X: k + t0, Y: y0 + t0})
		p.Line(vg.Point{X: k + t1, Y: y0 + t1})
		c.Stroke(p)
	}
}

// addDrain shades the drain phase, from traffic end to the end of the
// timeline (both in seconds), with a legend entry, and makes step series
// end at the end of the timeline. Nothing is shaded when the traffic end is
// unknown (zero) or there is no drain.
func (f *figure) addDrain(trafficEnd, end float64) {
	f.xMax = end
	if trafficEnd <= 0 || end <= trafficEnd {
		return
	}
	s := drainShade{from: trafficEnd, to: end}
	f.p.Add(s)
	f.legend.Add("drain: no new requests", s)
}

package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/idembench/idembench/reports"
)

func kneeFigure(curves []reports.CapacityCurve, sloP99Ms float64) *figure {
	f := newFigure("Latency against achieved throughput (open loop, coordinated omission corrected)",
		"achieved throughput (completed calls/s)", "latency (ms, log scale)")
	lo, hi, top := math.Inf(1), sloP99Ms, 0.0
	for _, c := range curves {
		for _, p := range c.Points {
			for _, v := range []float64{p.P50Ms, p.P99Ms, p.P999Ms} {
				if v > 0 {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			top = max(top, p.AchievedPerS)
		}
	}
	if top == 0 {
		f.noData("no step has latency figures")
		return f
	}
	lo, hi = positiveRange(lo, hi)
	logAxis(&f.p.Y, lo, hi)
	zeroBasedAxis(&f.p.X, top)
	for i, c := range curves {
		clr := runColors[i%len(runColors)]
		for _, s := range []struct {
			name  string
			pick  func(reports.CapacityPoint) float64
			width vg.Length
			dash  []vg.Length
		}{
			{" p50", func(p reports.CapacityPoint) float64 { return p.P50Ms }, vg.Points(1.2), []vg.Length{vg.Points(1), vg.Points(2)}},
			{" p99", func(p reports.CapacityPoint) float64 { return p.P99Ms }, vg.Points(2), nil},
			{" p99.9", func(p reports.CapacityPoint) float64 { return p.P999Ms }, vg.Points(1.2), []vg.Length{vg.Points(5), vg.Points(3)}},
		} {
			xys := make(plotter.XYs, 0, len(c.Points))
			for _, p := range c.Points {
				if v := s.pick(p); v > 0 {
					xys = append(xys, plotter.XY{X: p.AchievedPerS, Y: v})
				}
			}
			if l := f.addLine(c.Label+s.name, xys, clr, s.width, false); l != nil {
				l.Dashes = s.dash
				if sc, err := plotter.NewScatter(xys); err == nil {
					sc.GlyphStyle = draw.GlyphStyle{Color: clr, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
					f.p.Add(sc)
				}
			}
		}
	}
	slo := plotter.XYs{{X: 0, Y: sloP99Ms}, {X: f.p.X.Max, Y: sloP99Ms}}
	if l := f.addLine(fmt.Sprintf("objective p99 ≤ %s ms", reports.FormatNumber(sloP99Ms)), slo, errorRed, vg.Points(1), true); l != nil {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	}
	return f
}

package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"

	"github.com/idembench/idembench/reports"
)

// runColors is a categorical palette; runs past its end reuse it dashed.
var runColors = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255},
}

func compareLatencyFigure(runs []reports.Run) *figure {
	f := newFigure("Latency by percentile, per run", "percentile (nines scale)", "latency (ms, log scale)")
	ninesAxis(&f.p.X)
	lo, hi := math.Inf(1), 0.0
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		for _, p := range r.Summary.Spectrum {
			if p.Ms > 0 {
				lo = min(lo, p.Ms)
			}
			hi = max(hi, p.Ms)
		}
	}
	if hi == 0 {
		f.noData("no run has latency figures")
		return f
	}
	lo, hi = positiveRange(lo, hi)
	logAxis(&f.p.Y, lo, hi)
	for i, r := range runs {
		if r.Summary == nil {
			continue
		}
		f.addLine(r.Label, spectrumXYs(r.Summary.Spectrum, lo), runColors[i%len(runColors)], vg.Points(1.8), i >= len(runColors))
	}
	return f
}

func compareThroughputFigure(runs []reports.Run) *figure {
	f := newFigure("Throughput over time, per run", "time since start (s)", "completed calls per second (ops/s)")
	span, top := 0.0, 0.0
	for i, r := range runs {
		if r.Summary == nil || len(r.Summary.Timeline.Completed) == 0 || r.Summary.Timeline.BucketS <= 0 {
			continue
		}
		tl := &r.Summary.Timeline
		xys := rateXYs(tl.Completed, tl.BucketS, tl.SpanS)
		f.addSteps(r.Label, xys, tl.BucketS, runColors[i%len(runColors)], vg.Points(1.8), i >= len(runColors))
		span = max(span, tl.SpanS, float64(len(tl.Completed)-1)*tl.BucketS)
		top = max(top, maxY(xys))
	}
	if span == 0 {
		f.noData("no run has a timeline")
		return f
	}
	f.p.X.Min, f.p.X.Max = 0, span
	zeroBasedAxis(&f.p.Y, top)
	return f
}

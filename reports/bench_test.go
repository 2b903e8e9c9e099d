package reports

import (
	"sync"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// millionSpec is a 200 s open-loop run of 1,000,000 calls at 5,000 calls/s
// with two fault windows; with its effects the history holds about 1.3
// million ops.
var millionSpec = synthSpec{calls: 1_000_000, rate: 5000, clients: 256, seed: 11, faults: [][2]float64{{50, 53}, {120, 140}}}

var million = sync.OnceValue(func() *history.History { return synthHistory(millionSpec) })

// BenchmarkMeasure1M measures a 1,000,000-call history; the target is well
// under 2 s (reported as s/measure).
func BenchmarkMeasure1M(b *testing.B) {
	h := million()
	b.ReportAllocs()
	for b.Loop() {
		Measure(h, MeasureOptions{})
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/measure")
	b.ReportMetric(float64(len(h.Ops)), "ops")
}

// BenchmarkRenderPlots1M measures a 1,000,000-call history and renders
// every run plot (latency PNG and SVG, throughput PNG and SVG, latency over
// time PNG); the target is at most 5 s (reported as s/render).
func BenchmarkRenderPlots1M(b *testing.B) {
	h := million()
	p := RegisteredPlotter()
	if p == nil {
		b.Fatal("no Plotter registered: the test binary links reports/plots (plots_link_test.go)")
	}
	for b.Loop() {
		if _, err := p.RunPlots(Measure(h, MeasureOptions{})); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/render")
}

// BenchmarkWriteRunReport1M writes the whole run report of a
// 1,000,000-call history (measurement, plots, summary.json, report.md,
// report.html), without the checker (reported as s/report).
func BenchmarkWriteRunReport1M(b *testing.B) {
	h := million()
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WriteRunReport(dir, h, checker.Report{}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/report")
}

// Package plots draws the plots of package reports with gonum/plot: a
// run's latency by percentile, throughput over time and latency over time,
// a comparison's overlaid runs, and a capacity sweep's knee.
//
// Importing it registers its Plotter with reports.RegisterPlotter, so that
// reports.WriteRunReport, Regenerate, WriteComparison and WriteCapacity
// write the plots next to the tables. The idembench CLI imports it; a
// program that does not (a store author's test through harness/harnesstest)
// writes reports without plots and does not link gonum/plot, its fonts and
// its image back ends.
//
//	import _ "github.com/idembench/idembench/reports/plots"
package plots

import (
	"fmt"
	"sync"
	"time"

	"github.com/idembench/idembench/reports"
)

func init() { reports.RegisterPlotter(Plotter{}) }

// Plotter is the reports.Plotter of this package. The zero value is ready
// to use; it has no state.
type Plotter struct{}

var _ reports.Plotter = Plotter{}

// plotFile is one plot file: its name, the figure and the format.
type plotFile struct {
	name   string
	figure func() *figure
	format string
}

// RunPlots draws latency.png/.svg, throughput.png/.svg and
// latency-over-time.png (a scatter in SVG is large), in parallel.
func (Plotter) RunPlots(m *reports.Measurement) (map[string][]byte, error) {
	latency := func() *figure { return latencyFigure(m) }
	throughput := func() *figure { return throughputFigure(m) }
	overTime := func() *figure { return latencyOverTimeFigure(m) }
	return render([]plotFile{
		{reports.LatencyPlot + ".png", latency, "png"},
		{reports.LatencyPlot + ".svg", latency, "svg"},
		{reports.ThroughputPlot + ".png", throughput, "png"},
		{reports.ThroughputPlot + ".svg", throughput, "svg"},
		{reports.LatencyOverTimePlot + ".png", overTime, "png"},
	})
}

// ComparePlots draws compare-latency.png/.svg (each run's overall
// percentile spectrum) and compare-throughput.png/.svg (each run's
// completed calls per second). Fault windows are not shaded: they differ
// from run to run.
func (Plotter) ComparePlots(runs []reports.Run) (map[string][]byte, error) {
	latency := func() *figure { return compareLatencyFigure(runs) }
	throughput := func() *figure { return compareThroughputFigure(runs) }
	return render([]plotFile{
		{reports.CompareLatencyPlot + ".png", latency, "png"},
		{reports.CompareLatencyPlot + ".svg", latency, "svg"},
		{reports.CompareThroughputPlot + ".png", throughput, "png"},
		{reports.CompareThroughputPlot + ".svg", throughput, "svg"},
	})
}

// CapacityPlots draws knee.png and knee.svg: latency percentiles against
// achieved throughput, one colour per curve (p50 dotted, p99 solid, p99.9
// dashed), the objective sloP99Ms as a horizontal line.
func (Plotter) CapacityPlots(curves []reports.CapacityCurve, sloP99Ms float64) (map[string][]byte, error) {
	knee := func() *figure { return kneeFigure(curves, sloP99Ms) }
	return render([]plotFile{
		{reports.CapacityPlot + ".png", knee, "png"},
		{reports.CapacityPlot + ".svg", knee, "svg"},
	})
}

// render draws every file in parallel (each from its own figure: a figure
// is not safe for concurrent drawing) and returns the bytes by name.
func render(files []plotFile) (map[string][]byte, error) {
	out := make([][]byte, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, pf := range files {
		wg.Go(func() { out[i], errs[i] = pf.figure().render(pf.format) })
	}
	wg.Wait()
	byName := make(map[string][]byte, len(files))
	for i, pf := range files {
		if errs[i] != nil {
			return nil, fmt.Errorf("plots: %s: %w", pf.name, errs[i])
		}
		byName[pf.name] = out[i]
	}
	return byName, nil
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

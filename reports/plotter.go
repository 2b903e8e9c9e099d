package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// PlotsPackage is the import path of the package that draws the plots.
// Importing it registers its Plotter; the idembench CLI does.
const PlotsPackage = "github.com/idembench/idembench/reports/plots"

// Plotter draws the plots of the reports as PNG and SVG files. Every
// method returns the files by name (a base name such as "latency.png"),
// which the caller writes into the report's directory.
//
// The one implementation is in package reports/plots (PlotsPackage),
// which registers it when it is imported. It is kept out of this package
// so that a program that writes reports but no plots (a store author's
// test through harness/harnesstest) does not link gonum/plot, its fonts
// and its image back ends.
type Plotter interface {
	// RunPlots draws the plots of one run: LatencyPlot and
	// ThroughputPlot as .png and .svg, LatencyOverTimePlot as .png.
	RunPlots(m *Measurement) (map[string][]byte, error)
	// ComparePlots draws the overlaid plots of a comparison:
	// CompareLatencyPlot and CompareThroughputPlot as .png and .svg.
	ComparePlots(runs []Run) (map[string][]byte, error)
	// CapacityPlots draws the knee plot of a capacity sweep,
	// CapacityPlot as .png and .svg; sloP99Ms is the objective.
	CapacityPlots(curves []CapacityCurve, sloP99Ms float64) (map[string][]byte, error)
}

var registered atomic.Pointer[Plotter]

// RegisterPlotter makes p the Plotter of WriteRunReport, Regenerate,
// WriteComparison and WriteCapacity, and returns the one it replaces (nil
// when there was none). A nil p removes the Plotter: reports are then
// written without plots. Package reports/plots calls it when imported.
func RegisterPlotter(p Plotter) (previous Plotter) {
	var old *Plotter
	if p == nil {
		old = registered.Swap(nil)
	} else {
		old = registered.Swap(&p)
	}
	if old == nil {
		return nil
	}
	return *old
}

// RegisteredPlotter returns the Plotter the reports use, nil when the
// program links none (then no plot is written).
func RegisteredPlotter() Plotter {
	if p := registered.Load(); p != nil {
		return *p
	}
	return nil
}

// noPlots says in a report why it has no plots.
const noPlots = "No plots: this program does not link " + PlotsPackage +
	". The figures are in the tables; where the run saved its history, \"idembench report DIR\" draws the plots."

// writePlots writes files into dir. A name that is not a plain file name
// is an error: a Plotter writes only into the report's directory.
func writePlots(dir string, files map[string][]byte) error {
	for name, b := range files {
		if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
			return fmt.Errorf("reports: plot file name %q is not a file name", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("reports: plot %s: %w", name, err)
		}
	}
	return nil
}

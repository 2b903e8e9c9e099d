package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/checker"
)

// TestWithoutPlotter: a program that links no Plotter writes every report
// but the plot files, and the reports say why there are no plots. It is
// not parallel: it removes the Plotter this test binary links for the
// time it runs (parallel tests start after it).
func TestWithoutPlotter(t *testing.T) {
	if RegisteredPlotter() == nil {
		t.Fatal("the test binary links no Plotter (plots_link_test.go imports reports/plots)")
	}
	prev := RegisterPlotter(nil)
	defer RegisterPlotter(prev)
	if RegisteredPlotter() != nil {
		t.Fatal("RegisterPlotter(nil) left a Plotter")
	}

	run := t.TempDir()
	if _, err := WriteRunReport(run, goldenHistory(), checker.Report{}, Options{Machine: goldenMachine}); err != nil {
		t.Fatal(err)
	}
	cmpDir := t.TempDir()
	runs := []Run{RunFromHistory("golden", goldenHistory(), nil, Options{Machine: goldenMachine})}
	if _, err := WriteComparison(cmpDir, runs); err != nil {
		t.Fatal(err)
	}
	capDir := t.TempDir()
	curves := []CapacityCurve{{Label: "memstore", ClosedLoopPerS: 900, Points: []CapacityPoint{{OfferedPerS: 100, AchievedPerS: 100, P99Ms: 2, Verdict: "ok", Sustainable: true}}}}
	if _, err := WriteCapacity(capDir, curves, 50); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		dir, file string
		want      []string // present files
	}{
		{run, HTMLFile, []string{SummaryFile, MarkdownFile, HTMLFile}},
		{cmpDir, CompareMarkdownFile, []string{CompareMarkdownFile}},
		{capDir, CapacityMarkdown, []string{CapacityMarkdown}},
	} {
		entries, err := os.ReadDir(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
			if ext := filepath.Ext(e.Name()); ext == ".png" || ext == ".svg" {
				t.Errorf("%s: plot written without a Plotter", e.Name())
			}
		}
		for _, w := range c.want {
			if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("%s missing from %v", w, got)
			}
		}
		b, err := os.ReadFile(filepath.Join(c.dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if page := string(b); !strings.Contains(page, PlotsPackage) || strings.Contains(page, ".png") {
			t.Errorf("%s does not say why it has no plots, or links a plot:\n%s", c.file, page)
		}
	}
}

// TestPlotFileNames: a Plotter cannot write outside the report's
// directory.
func TestPlotFileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"", ".", "..", "../x.png", "sub/x.png", "/tmp/x.png"} {
		if err := writePlots(dir, map[string][]byte{name: {1}}); err == nil {
			t.Errorf("plot file name %q accepted", name)
		}
	}
	if err := writePlots(dir, map[string][]byte{"x.png": {1}}); err != nil {
		t.Errorf("x.png: %v", err)
	}
}

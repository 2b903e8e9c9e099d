package reports

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/idembench/idembench/checker"
)

var sampleDir = flag.String("sample", "", "also write the sample run report of TestSampleReport into this directory, to look at")

// TestSampleReport renders a full run report from a realistic synthetic
// history with a fault window and checks every file is there. Run with
// -sample DIR to keep the files and look at them.
func TestSampleReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if *sampleDir != "" {
		dir = *sampleDir
	}
	h := synthHistory(realisticSpec)
	rep := checker.Check(h, checker.Options{VisualizeDir: filepath.Join(dir, VisualizeDir), MaxVisualizations: 2})
	s, err := WriteRunReport(dir, h, rep, Options{
		ReplayCommand: "idembench run --scenario synthetic --seed 7",
		Thresholds:    &Thresholds{MaxP99: 50e6, MinThroughput: 1000, MaxErrorRate: 0.01},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{SummaryFile, MarkdownFile, HTMLFile, "latency.png", "latency.svg", "throughput.png", "throughput.svg", "latency-over-time.png"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-24s %7d bytes", name, fi.Size())
	}
	t.Logf("verdict %s, %d violations, throughput %.0f ops/s, p99 %.2f ms", s.Verdict, s.ViolationCount(), s.ThroughputPerS, s.Latency.Overall.P99Ms)
	if *sampleDir != "" { // also the 1,000,000-call run of the benchmarks, unchecked
		if _, err := WriteRunReport(filepath.Join(dir, "million"), million(), checker.Report{}, Options{}); err != nil {
			t.Fatal(err)
		}
	}
}

package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// compareRuns returns three synthetic runs of different speeds, the second
// with a fault window.
func compareRuns(t *testing.T) []Run {
	t.Helper()
	var runs []Run
	for _, c := range []struct {
		label string
		spec  synthSpec
	}{
		{"memstore", synthSpec{calls: 20_000, rate: 2000, clients: 16, seed: 1}},
		{"redis", synthSpec{calls: 15_000, rate: 1500, clients: 16, seed: 2, scale: 1.8, faults: [][2]float64{{4, 6}}}},
		{"postgres", synthSpec{calls: 10_000, rate: 1000, clients: 16, seed: 3, scale: 4}},
	} {
		h := synthHistory(c.spec)
		rep := checker.Check(h, checker.Options{Workers: 1})
		runs = append(runs, RunFromHistory(c.label, h, &rep, Options{Machine: goldenMachine}))
	}
	return runs
}

func TestCompare(t *testing.T) {
	t.Parallel()
	runs := compareRuns(t)
	c := Compare(append(runs, Run{Label: "missing"}))
	if len(c.Rows) != 3 {
		t.Fatalf("%d rows, want 3 (a run without summary is skipped)", len(c.Rows))
	}
	if !(c.Rows[0].ThroughputPerS > c.Rows[2].ThroughputPerS && c.Rows[0].P50Ms < c.Rows[2].P50Ms) {
		t.Errorf("memstore should be faster than postgres: %+v / %+v", c.Rows[0], c.Rows[2])
	}
	golden(t, "compare.txt", []byte(c.Text()))
	golden(t, "compare.md", []byte(c.Markdown()))

	dir := t.TempDir()
	if *sampleDir != "" {
		dir = filepath.Join(*sampleDir, "compare")
	}
	if _, err := WriteComparison(dir, runs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CompareMarkdownFile, CompareLatencyPlot + ".png", CompareLatencyPlot + ".svg", CompareThroughputPlot + ".png", CompareThroughputPlot + ".svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestLoadRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	withSummary := filepath.Join(root, "run-a")
	os.MkdirAll(withSummary, 0o755)
	writeGoldenRun(t, withSummary)
	r, err := LoadRun("", withSummary)
	if err != nil {
		t.Fatal(err)
	}
	if r.Label != "run-a" || r.Summary.Verdict != "violation" {
		t.Errorf("label %q, verdict %q", r.Label, r.Summary.Verdict)
	}

	historyOnly := filepath.Join(root, "run-b")
	os.MkdirAll(historyOnly, 0o755)
	f, _ := os.Create(filepath.Join(historyOnly, HistoryFile))
	history.Encode(f, goldenHistory())
	f.Close()
	r, err = LoadRun("B", historyOnly)
	if err != nil {
		t.Fatal(err)
	}
	if r.Label != "B" || r.Summary.Verdict != VerdictUnchecked || r.Summary.Counts.Calls != 8 {
		t.Errorf("label %q, verdict %q, calls %d", r.Label, r.Summary.Verdict, r.Summary.Counts.Calls)
	}

	if _, err := LoadRun("", filepath.Join(root, "none")); err == nil {
		t.Error("empty directory: no error")
	}
}

func ExampleCompare() {
	fast := &Summary{Verdict: "ok", ThroughputPerS: 12000, Counts: Counts{Calls: 120000}}
	fast.Latency.Overall = LatencyStats{P50Ms: 0.41, P99Ms: 1.9, P999Ms: 4.2, MaxMs: 12}
	slow := &Summary{Verdict: "violation", ThroughputPerS: 3100, ErrorRate: 0.012, Counts: Counts{Calls: 31000}}
	slow.Latency.Overall = LatencyStats{P50Ms: 2.2, P99Ms: 9.8, P999Ms: 31, MaxMs: 1004}
	slow.Violations = []ViolationSummary{{Invariant: "I1"}}
	c := Compare([]Run{{"memstore", fast}, {"naive/check-then-act", slow}})
	fmt.Print(c.Text())
	// Output:
	// run                   verdict    violations    calls  throughput (ops/s)  error rate  p50 (ms)  p99 (ms)  p99.9 (ms)  max (ms)
	// memstore              ok                  0  120,000              12,000          0%      0.41       1.9         4.2        12
	// naive/check-then-act  violation           1   31,000               3,100        1.2%       2.2       9.8          31     1,004
}

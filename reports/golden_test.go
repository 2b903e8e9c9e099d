package reports

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenMachine masks the machine a test runs on.
var goldenMachine = &Machine{GOOS: "linux", GOARCH: "amd64", NumCPU: 8, GoVersion: "go1.26.0", Hostname: "ci"}

// goldenHistory is a small hand-built open-loop run: a double execution on
// key "b" (I1, I4), a fault window with a call that never returned and a
// busy key, a call sent 5 ms late, and a liveness probe.
func goldenHistory() *history.History {
	const base = int64(1_000_000_000)
	at := func(msec float64) int64 { return base + int64(msec*1e6) }
	call := func(client int, key string, intended, sent, ret float64, o history.Outcome) history.Op {
		op := history.Op{Kind: history.KindCall, Client: client, Worker: client, Key: key, Request: 1, Attempt: 1,
			Intended: at(intended), Call: at(sent), Return: at(ret), Outcome: o}
		if ret < 0 {
			op.Return = history.NoReturn
		}
		return op
	}
	exec := func(op history.Op, token uint64, resp string) history.Op {
		op.Token, op.Resp, op.Exec = token, resp, "x"+op.Key+resp
		return op
	}
	effect := func(client int, key string, from, to float64, token uint64, resp string) history.Op {
		return history.Op{Kind: history.KindEffect, Client: client, Worker: client, Key: key,
			Call: at(from), Return: at(to), Token: token, Exec: "x" + key + resp, Applied: true}
	}
	replay := func(op history.Op, resp string) history.Op { op.Resp = resp; return op }
	h := &history.History{Header: history.Header{
		Format: history.Format, Version: history.FormatVersion, Tool: "idembench test", Scenario: "golden",
		Seed: 42, Backend: "memstore", Engine: "fenced", Options: map[string]string{"clients": "2", "rate": "100/s"},
		Start: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), LeaseTTL: 500 * time.Millisecond, Clock: "test",
	}}
	h.Ops = []history.Op{
		exec(call(0, "a", 0, 0.1, 2.1, history.Executed), 1, "r1"),
		effect(0, "a", 0.5, 1.5, 1, "r1"),
		replay(call(1, "a", 10, 10.1, 11.2, history.Replayed), "r1"),
		exec(call(0, "b", 20, 20.1, 24, history.Executed), 2, "r2"),
		effect(0, "b", 21, 22, 2, "r2"),
		call(1, "c", 30, 30.1, -1, history.Unknown),
		exec(call(0, "b", 40, 40.2, 47, history.Executed), 3, "r3"),
		effect(0, "b", 42, 44, 3, "r3"),
		call(1, "d", 50, 50.1, 80.1, history.InProgress),
		exec(call(0, "e", 70, 75, 77.5, history.Executed), 4, "r4"),
		effect(0, "e", 76, 77, 4, "r4"),
		call(1, "f", 90, 90.1, 90.9, history.Mismatch),
		{Kind: history.KindFault, Client: 1, Worker: 1, Call: at(25), Return: at(60), Label: "pause client 1"},
		{Kind: history.KindCall, Client: 2, Worker: 2, Key: "a", Call: at(100), Return: at(101), Outcome: history.Replayed, Resp: "r1", Probe: true},
	}
	history.SortByCall(h.Ops)
	return h
}

// writeGoldenRun writes the report of goldenHistory into dir, with the
// history saved next to it as the CLI does.
func writeGoldenRun(t *testing.T, dir string) *Summary {
	t.Helper()
	h := goldenHistory()
	if err := writeFile(filepath.Join(dir, HistoryFile), func(w io.Writer) error { return history.Encode(w, h) }); err != nil {
		t.Fatal(err)
	}
	rep := checker.Check(h, checker.Options{VisualizeDir: filepath.Join(dir, VisualizeDir), Workers: 1})
	s, err := WriteRunReport(dir, h, rep, Options{
		ReplayCommand: "idembench run --scenario golden --seed 42 --backend memstore",
		Machine:       goldenMachine,
		Thresholds:    &Thresholds{MaxP99: 10 * time.Millisecond, MinThroughput: 100, MaxErrorRate: 0.05},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGoldenRunReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := writeGoldenRun(t, dir)
	if s.Verdict != "violation" {
		t.Errorf("verdict = %q, want violation (double execution of b)", s.Verdict)
	}
	for _, name := range []string{SummaryFile, MarkdownFile} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, got)
	}
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from %s (-want +got; go test -update rewrites it):\n%s", name, path, diff)
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "golden", SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSummary(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := EncodeSummary(&got, s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("decode then encode changed summary.json (-want +got):\n%s", diff)
	}
}

func TestDecodeSummaryRejects(t *testing.T) {
	for name, in := range map[string]string{
		"newer":      `{"schema_version": 2}`,
		"no version": `{"verdict": "ok"}`,
		"not json":   `verdict: ok`,
	} {
		if _, err := DecodeSummary(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := DecodeSummary(strings.NewReader(`{"schema_version": 1, "field_from_the_future": true}`)); err != nil {
		t.Errorf("unknown field: %v, want it ignored", err)
	}
}

func TestHTMLIsSelfContained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := writeGoldenRun(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, `<img src="data:image/png;base64,`); n != 3 {
		t.Errorf("%d embedded PNG plots, want 3", n)
	}
	if m := regexp.MustCompile(`<(img|script|link)[^>]+(src|href)="(https?:|/)`).FindString(page); m != "" {
		t.Errorf("report.html loads an external resource: %s", m)
	}
	var vis string
	for _, v := range s.Violations {
		if v.Visualization != "" {
			vis = v.Visualization
		}
	}
	if vis == "" || filepath.IsAbs(vis) || !strings.HasPrefix(vis, VisualizeDir+"/") {
		t.Fatalf("visualization path %q, want relative under %s/", vis, VisualizeDir)
	}
	if _, err := os.Stat(filepath.Join(dir, vis)); err != nil {
		t.Errorf("linked visualization: %v", err)
	}
	if !strings.Contains(page, `<a href="`+vis+`">visualization</a>`) {
		t.Errorf("report.html does not link %s", vis)
	}
	for _, want := range []string{"idembench run: violation", "I1 at-most-once", "pause client 1", "idembench run --scenario golden"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func TestRegenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeGoldenRun(t, dir)
	files := []string{SummaryFile, MarkdownFile, HTMLFile, LatencyPlot + ".png", ThroughputPlot + ".svg", LatencyOverTimePlot + ".png"}
	before := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = string(b)
		if f != SummaryFile {
			os.Remove(filepath.Join(dir, f))
		}
	}
	for _, recheck := range []bool{false, true} {
		s, err := Regenerate(dir, RegenerateOptions{Recheck: recheck})
		if err != nil {
			t.Fatalf("recheck %v: %v", recheck, err)
		}
		if s.Verdict != "violation" {
			t.Errorf("recheck %v: verdict %q", recheck, s.Verdict)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatalf("recheck %v: %v", recheck, err)
			}
			if string(b) != before[f] {
				t.Errorf("recheck %v: regenerated %s differs from the original", recheck, f)
			}
		}
	}
	// Without summary.json the history is checked again.
	os.Remove(filepath.Join(dir, SummaryFile))
	s, err := Regenerate(dir, RegenerateOptions{Options: Options{Machine: goldenMachine}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Verdict != "violation" || s.ReplayCommand != "" || s.Thresholds != nil {
		t.Errorf("without summary: verdict %q, replay %q, thresholds %v", s.Verdict, s.ReplayCommand, s.Thresholds)
	}
}

func TestRegenerateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Regenerate(dir, RegenerateOptions{}); err == nil {
		t.Error("no history: no error")
	}
	writeGoldenRun(t, dir)
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte("{"), 0o644)
	if _, err := Regenerate(dir, RegenerateOptions{}); err == nil {
		t.Error("corrupt summary.json: no error")
	}
	if _, err := Regenerate(dir, RegenerateOptions{Recheck: true}); err != nil {
		t.Errorf("corrupt summary.json with Recheck: %v", err)
	}
}

func TestUncheckedRun(t *testing.T) {
	t.Parallel()
	s, err := WriteRunReport(t.TempDir(), goldenHistory(), checker.Report{}, Options{Machine: goldenMachine})
	if err != nil {
		t.Fatal(err)
	}
	if s.Verdict != VerdictUnchecked || len(s.Invariants) != 0 || s.Violations == nil {
		t.Errorf("verdict %q, %d invariants, violations %v", s.Verdict, len(s.Invariants), s.Violations)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/reports"
)

// TestHistoryFlag: run --history=sampled and none say in the run line
// what the run directory holds; check of a sample says the verdict covers
// the sampled keys; report refuses to redraw a sample; check and report
// of a run without history say it was made with --history=none.
func TestHistoryFlag(t *testing.T) {
	base := t.TempDir()
	dirs := map[string]string{}
	for _, mode := range []string{"sampled", "none"} {
		dirs[mode] = filepath.Join(base, mode)
		r := runCLI(t, "run", "--scenario", "duplicates", "--duration", "200ms", "--seed", "3", "--no-progress",
			"--history", mode, "--out", dirs[mode])
		if r.code != exitOK {
			t.Fatalf("--history=%s: exit %d\n%s", mode, r.code, r.err)
		}
		want := map[string]string{
			"sampled": "history.jsonl ",
			"none":    "no history.jsonl: --history=none",
		}[mode]
		if line := lineWith(r.stdout, "run dir: "); !strings.Contains(line, want) {
			t.Errorf("--history=%s: run line %q lacks %q", mode, line, want)
		}
	}
	if line := lineWith(runCLI(t, "check", dirs["sampled"]).stdout, "note: the history holds"); !strings.Contains(line, "1 key in 16") {
		t.Errorf("check of a sample does not say so: %q", line)
	}
	if r := runCLI(t, "report", dirs["sampled"]); r.code != exitUsage || !strings.Contains(r.err, "--history=sampled") {
		t.Errorf("report of a sample: exit %d, want %d saying why:\n%s", r.code, exitUsage, r.err)
	}
	for _, args := range [][]string{{"check", dirs["none"]}, {"report", "--recheck", dirs["none"]}, {"report", dirs["none"]}} {
		r := runCLI(t, args...)
		if r.code != exitUsage || !strings.Contains(r.err, "was made with --history=none") {
			t.Errorf("%v: exit %d, want %d saying the run has no history:\n%s", args, r.code, exitUsage, r.err)
		}
	}
	if r := runCLI(t, "run", "--history", "gz", "--no-save"); r.code != exitUsage || !strings.Contains(r.err, `"full","sampled","none"`) {
		t.Errorf("--history gz: exit %d\n%s", r.code, r.err)
	}
}

// TestHistoryNote: the run line gives the size of history.jsonl, with a
// hint when it is big, and says when there is none.
func TestHistoryNote(t *testing.T) {
	dir := t.TempDir()
	if got := historyNote(dir, harness.HistoryOptionNone); got != "no history.jsonl: --history=none" {
		t.Errorf("none: %q", got)
	}
	path := filepath.Join(dir, reports.HistoryFile)
	for _, c := range []struct {
		size   int64
		option string
		want   string
	}{
		{812, "", "history.jsonl 812 B"},
		{4_816_210, harness.HistoryOptionSampled, "history.jsonl 4.8 MB: 1 key in 16, --history=sampled"},
		{12_500_000, "", "history.jsonl 12 MB"},
		{94_000_000, "", "history.jsonl 94 MB; --history=sampled or none writes less"},
	} {
		if err := os.Truncate(path, c.size); os.IsNotExist(err) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, c.size); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		if got := historyNote(dir, c.option); got != c.want {
			t.Errorf("%d bytes, option %q: %q, want %q", c.size, c.option, got, c.want)
		}
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVisualizationPathsPointIntoTheRunDirectory: a run that fails I4
// prints the path of each violation's visualization, and that path is in
// the run directory the user named (the run writes into a temporary
// directory beside it and renames it at the end), and the file is there.
func TestVisualizationPathsPointIntoTheRunDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r := runCLI(t, "run", "--scenario", "mismatched-requests", "--engine", "naive/unscoped-key", "--seed", "1",
		"--duration", "500ms", "--out", dir, "--no-progress")
	if r.code != exitViolation {
		t.Fatalf("exit %d, want %d (violation)\n%s\n%s", r.code, exitViolation, r.stdout, r.err)
	}
	var paths []string
	for line := range strings.Lines(r.stdout) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "visualization: "); ok {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		t.Fatalf("no visualization printed:\n%s", r.stdout)
	}
	for _, p := range paths {
		if filepath.Dir(p) != filepath.Join(dir, "violations") {
			t.Errorf("visualization %s is not in %s", p, filepath.Join(dir, "violations"))
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("visualization printed but not there: %v", err)
		}
	}
}

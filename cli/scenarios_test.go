package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the tests leave no goroutine behind. go-redis's
// background dial of a pool whose server died ends within a second of the
// pool's Close, on its own: it is not a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// TestRunDirectoryRechecks writes a run directory of an unsafe cell and
// re-checks it offline with the check subcommand: same verdict.
func TestRunDirectoryRechecks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := runCLI(t, "run", "--scenario", "gc-pause", "--sink", "plain", "--duration", "1s", "--seed", "42", "--out", dir, "--no-progress")
	if r.code != exitViolation {
		t.Fatalf("run exit %d, want %d\n%s%s", r.code, exitViolation, r.stdout, r.err)
	}
	for _, f := range []string{"history.jsonl", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	c := runCLI(t, "check", dir)
	if c.code != exitViolation {
		t.Fatalf("check exit %d, want %d\n%s%s", c.code, exitViolation, c.stdout, c.err)
	}
	if !strings.Contains(c.stdout, "I1") {
		t.Fatalf("check output does not name I1:\n%s", c.stdout)
	}
}

package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/harness/engines"
)

// buildCLI builds the idembench binary into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found: cannot build the CLI")
	}
	bin := filepath.Join(t.TempDir(), "idembench")
	cmd := exec.Command(gobin, "build", "-o", bin, "../cmd/idembench")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runBinary runs cmd and returns its exit code and its stdout and stderr
// together; a command that could not be run ends the test.
func runBinary(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestCLIExitCodes builds the binary and checks the exit codes of
// docs/design/verification.md on runs that finish quickly.
func TestCLIExitCodes(t *testing.T) {
	bin := buildCLI(t)
	work := t.TempDir()
	// A scenario with a threshold no run can meet.
	strict := filepath.Join(work, "strict.yaml")
	src := "name: strict\nduration: 300ms\nengine: {lease_ttl: 300ms}\nworkload: {clients: 4}\nthresholds: {min_throughput: 1e12}\n"
	if err := os.WriteFile(strict, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want int
		out  string // a substring stdout or stderr must contain
	}{
		{"pass", []string{"run", "--scenario", "duplicates", "--duration", "500ms", "--seed", "3", "--out", filepath.Join(work, "pass")}, exitOK, "verdict: OK"},
		{"violation", []string{"run", "--scenario", "duplicates", "--engine", "naive/cache-on-success", "--duration", "500ms", "--seed", "3", "--no-save"}, exitViolation, "VIOLATION"},
		{"unknown scenario", []string{"run", "--scenario", "nope"}, exitUsage, "no built-in scenario"},
		{"unknown engine", []string{"run", "--engine", "naive/nope"}, exitUsage, "--engine"},
		{"bad backend", []string{"run", "--backend", "mongo"}, exitUsage, "backend"},
		{"tx sink on memory", []string{"run", "--sink", "tx", "--duration", "100ms"}, exitUsage, "needs backend postgres"},
		{"unknown flag", []string{"run", "--frobnicate"}, exitUsage, "frobnicate"},
		{"check missing", []string{"check", filepath.Join(work, "missing")}, exitUsage, "missing"},
		{"check pass", []string{"check", filepath.Join(work, "pass")}, exitOK, "verdict: OK"},
		{"threshold", []string{"run", "--scenario", "duplicates", "--duration", "300ms", "--seed", "3", "--no-save", "--min-throughput", "1e12"}, exitThreshold, "threshold missed"},
		{"scenario threshold", []string{"run", "--scenario", strict, "--seed", "3", "--no-save"}, exitThreshold, "threshold missed"},
		{"scenario threshold ignored", []string{"run", "--scenario", strict, "--seed", "3", "--no-save", "--ignore-scenario-thresholds"}, exitOK, "verdict: OK"},
		{"help", []string{"--help"}, exitOK, "Usage: idembench"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = work
			code, out := runBinary(t, cmd)
			if code != c.want {
				t.Fatalf("idembench %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.want, out)
			}
			if !strings.Contains(out, c.out) {
				t.Fatalf("idembench %s: output lacks %q:\n%s", strings.Join(c.args, " "), c.out, out)
			}
		})
	}
}

// TestBadScenarioFileIsUsageError: a user file with an unknown field exits 2
// and names the field and line.
func TestBadScenarioFileIsUsageError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("name: bad\nduration: 1s\nengine:\n  lease_ttl: 100ms\n  leese: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := Run(context.Background(), []string{"run", "--scenario", path, "--no-save"}, &out, &errb, engines.Builtin()...)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if msg := errb.String(); !strings.Contains(msg, "leese") || !strings.Contains(msg, "line 5") {
		t.Fatalf("error does not name the field and line: %s", msg)
	}
}

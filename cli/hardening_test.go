package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
)

// TestFlagLimits: each workload flag goes through scenarios.Overrides; a
// value beyond its limit is a usage error that names the flag and the
// limit.
func TestFlagLimits(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--rate=-3"}, []string{"--rate", "negative"}},
		{[]string{"--rate=NaN"}, []string{"--rate", "not a finite number"}},
		{[]string{"--check-timeout=-1s"}, []string{"--check-timeout", "between 0 (exclusive) and 1h"}},
		{[]string{"--clients", "0"}, []string{"--clients", "below the minimum of 1"}},
		{[]string{"--clients", "100000000"}, []string{"--clients", "above the limit of 10000"}},
		{[]string{"--duration", "48h"}, []string{"--duration", "above the limit of 24h"}},
	}
	for _, cmd := range []string{"run", "compare"} {
		for _, c := range cases {
			t.Run(cmd+" "+strings.Join(c.args, " "), func(t *testing.T) {
				dir := t.TempDir()
				args := append([]string{cmd, "--no-progress", "--out", filepath.Join(dir, "out")}, c.args...)
				r := runCLI(t, args...)
				if r.code != exitUsage {
					t.Fatalf("exit %d, want %d\n%s", r.code, exitUsage, r.err)
				}
				for _, w := range c.want {
					if !strings.Contains(r.err, w) {
						t.Errorf("stderr lacks %q:\n%s", w, r.err)
					}
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("a refused command wrote %v", ents)
				}
			})
		}
	}
}

// TestFlagOverridesApply: flags that are set replace the scenario's
// values; an explicit --rate 0 is closed loop.
func TestFlagOverridesApply(t *testing.T) {
	r := runCLI(t, "run", "--no-save", "--no-progress", "--scenario", "duplicates", "--seed", "3",
		"--duration", "300ms", "--clients", "3", "--rate", "0")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.err)
	}
	if want := "--duration 300ms --clients 3 --rate 0"; !strings.Contains(r.stdout+r.err, want) {
		t.Errorf("replay line lacks %q:\n%s", want, r.stdout+r.err)
	}
}

// TestOutDirectory: --out refuses a non-empty directory that is not a
// run, and replaces a previous run whole (no stale violations/*.html).
func TestOutDirectory(t *testing.T) {
	t.Parallel() // in-process runs share nothing; CI time
	work := t.TempDir()
	foreign := foreignDir(t, work)
	r := runCLI(t, "run", "--no-progress", "--duration", "200ms", "--out", foreign)
	if r.code != exitUsage || !strings.Contains(r.err, "not an idembench run directory") {
		t.Fatalf("foreign --out: exit %d, want %d and a reason\n%s", r.code, exitUsage, r.err)
	}
	if got := dirNames(t, work); !slices.Equal(got, []string{"foreign"}) {
		t.Fatalf("refused run left %v beside it", got)
	}
	if !foreignUntouched(t, foreign) {
		t.Fatalf("refused run wrote into the directory: %v", dirNames(t, foreign))
	}

	out := filepath.Join(work, "x")
	// What an idembench killed with SIGKILL left beside x: removed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(work, ".x"+tmpInfix+strconv.Itoa(dead.Process.Pid))
	if err := os.MkdirAll(filepath.Join(stale, "violations"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "run", "--no-progress", "--scenario", "gc-pause", "--sink", "plain", "--seed", "1", "--out", out)
	if r.code != exitViolation {
		t.Fatalf("unsafe run: exit %d, want %d\n%s", r.code, exitViolation, r.err)
	}
	if len(dirNames(t, filepath.Join(out, "violations"))) == 0 {
		t.Fatal("the unsafe run wrote no violations/*.html; the test needs some")
	}
	r = runCLI(t, "run", "--no-progress", "--duration", "300ms", "--seed", "2", "--out", out)
	if r.code != exitOK {
		t.Fatalf("second run: exit %d\n%s", r.code, r.err)
	}
	if stale := dirNames(t, filepath.Join(out, "violations")); len(stale) != 0 {
		t.Errorf("stale visualizations next to the new summary: %v", stale)
	}
	if got := dirNames(t, work); !slices.Equal(got, []string{"foreign", "x"}) {
		t.Errorf("temporary directories left beside the run: %v", got)
	}
	if !strings.Contains(r.stdout, "run dir: "+out+" ") {
		t.Errorf("run dir line does not name %s:\n%s", out, r.stdout)
	}
}

// TestCompareOutDirectory: compare --out replaces a previous comparison
// whole (a configuration it no longer runs is gone), refuses a foreign
// directory, and leaves no temporary directory beside it.
func TestCompareOutDirectory(t *testing.T) {
	t.Parallel() // in-process runs share nothing; CI time
	work := t.TempDir()
	out := filepath.Join(work, "cmp")
	args := []string{"compare", "--no-progress", "--duration", "200ms", "--seed", "1", "--out", out}
	r := runCLI(t, append(args, "--sinks", "fenced,plain")...)
	if r.code != exitViolation { // the plain sink without recovery is caught
		t.Fatalf("first compare: exit %d, want %d\n%s", r.code, exitViolation, r.err)
	}
	if got := dirNames(t, out); !slices.Contains(got, "memory_plain") || !slices.Contains(got, "compare.md") {
		t.Fatalf("first compare wrote %v", got)
	}
	r = runCLI(t, append(args, "--sinks", "fenced")...)
	if r.code != exitOK {
		t.Fatalf("second compare: exit %d\n%s", r.code, r.err)
	}
	got := dirNames(t, out)
	if slices.Contains(got, "memory_plain") || !slices.Contains(got, "memory") || !slices.Contains(got, "compare.md") {
		t.Errorf("second compare left %v, want its own run and compare.md only", got)
	}
	if got := dirNames(t, work); !slices.Equal(got, []string{"cmp"}) {
		t.Errorf("temporary directories left beside the comparison: %v", got)
	}
	foreign := foreignDir(t, work)
	r = runCLI(t, "compare", "--no-progress", "--duration", "200ms", "--out", foreign)
	if r.code != exitUsage || !strings.Contains(r.err, "not an idembench run directory") {
		t.Fatalf("foreign --out: exit %d, want %d and a reason\n%s", r.code, exitUsage, r.err)
	}
	if !foreignUntouched(t, foreign) {
		t.Fatalf("refused compare wrote into the directory: %v", dirNames(t, foreign))
	}
}

// foreignDir makes dir/foreign, a non-empty directory that is not a run
// (notes.txt), and returns it: an --out every command must refuse.
func foreignDir(t *testing.T, dir string) string {
	t.Helper()
	foreign := filepath.Join(dir, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	return foreign
}

// foreignUntouched reports whether foreign (foreignDir's) holds its
// notes.txt alone.
func foreignUntouched(t *testing.T, foreign string) bool {
	t.Helper()
	return slices.Equal(dirNames(t, foreign), []string{"notes.txt"})
}

// stuckScenario writes a scenario that runs for an hour with two clients
// paused for ten minutes at its start (a run to interrupt) into dir and
// returns its path.
func stuckScenario(t *testing.T, dir string) string {
	t.Helper()
	stuck := filepath.Join(dir, "stuck.yaml")
	src := "name: stuck\nduration: 1h\nengine: {lease_ttl: 10h, heartbeat: on}\nworkload: {clients: 2}\n" +
		"faults:\n  - {kind: pause, point: before-fn, duration: 10m, count: 2, window: [0, 0.0001]}\n"
	if err := os.WriteFile(stuck, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return stuck
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestInterruptExits130: SIGINT ends a run stuck in a long pause within 2 s,
// with exit 130 and one line saying what was written; the history so far
// holds the faults injected so far, and its check does not call I6 ok.
func TestInterruptExits130(t *testing.T) {
	bin := buildCLI(t)
	work := t.TempDir()
	stuck := stuckScenario(t, work)
	cases := []struct {
		name string
		args []string
		want string
		file string // a file the run directory must hold, if any
	}{
		{"saved", []string{"--out", filepath.Join(work, "run")}, "wrote the history so far to " + filepath.Join(work, "run"), reports.HistoryFile},
		{"no-save", []string{"--no-save"}, "nothing written", ""},
		// Worker processes: each saves its history when told to stop.
		{"workers", []string{"--backend", "redis", "--redis-url", testenv.RedisURL(t), "--workers", "2", "--out", filepath.Join(work, "workers")},
			"wrote the history so far to " + filepath.Join(work, "workers"), reports.HistoryFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"run", "--scenario", stuck, "--seed", "5", "--no-progress"}, c.args...)...)
			// Worker processes get longer to start and reach their pause.
			wait := map[bool]time.Duration{false: time.Second, true: 3 * time.Second}[c.name == "workers"]
			code, stderr, took := signalCLI(t, cmd, wait, syscall.SIGINT)
			if took > 2*time.Second {
				t.Errorf("exited %s after SIGINT, want within 2 s", took)
			}
			if code != exitInterrupted {
				t.Errorf("exit %d, want %d\n%s", code, exitInterrupted, stderr)
			}
			if !strings.Contains(stderr, "idembench: interrupted: "+c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, stderr)
			}
			if c.file != "" {
				out := c.args[len(c.args)-1]
				b, err := os.ReadFile(filepath.Join(out, c.file))
				if err != nil {
					t.Fatalf("run directory: %v", err)
				}
				h, err := history.Decode(bytes.NewReader(b))
				if err != nil || len(h.Ops) == 0 {
					t.Errorf("history so far: %d ops, %v; want some", opsOf(h), err)
				}
				// The pauses under way when the run was cut short are
				// faults of the history so far, and its check says what it
				// could not check rather than "ok".
				if n, pauses := faultsOf(h), history.CountFaults(h.Ops)[history.FaultPause]; n == 0 || pauses != n {
					t.Errorf("the history so far records %d faults, %d of kind pause; the run injected pauses", n, pauses)
				}
				r := runCLI(t, "check", out)
				if strings.Contains(r.stdout, "faults injected: 0") || !strings.Contains(r.stdout, " (pause ") ||
					!strings.Contains(r.stdout, "I6 not checked") || strings.Contains(r.stdout, "I6 ok") {
					t.Errorf("check of the history so far:\n%s", r.stdout)
				}
			}
		})
	}
}

// TestReplayDescribesWhatRan: the replay line and summary.json say
// --no-recovery when recovery was off, whatever the reason (a plain sink
// turns the requested recovery off).
func TestReplayDescribesWhatRan(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"plain sink, recovery requested", []string{"--sink", "plain"}, "--no-recovery"},
		{"fenced sink, recovery off", []string{"--no-recovery"}, "--no-recovery"},
		{"fenced sink, recovery on", nil, "--recovery"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "--no-progress", "--scenario", "duplicates", "--duration", "300ms", "--seed", "4", "--out", out}, c.args...)
			r := runCLI(t, args...)
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.err)
			}
			b, err := os.ReadFile(filepath.Join(out, reports.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			var s reports.Summary
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			for where, line := range map[string]string{"summary.json": s.ReplayCommand, "stdout": lineWith(r.stdout, "replay: ")} {
				if fields := strings.Fields(line); !slices.Contains(fields, c.want) {
					t.Errorf("%s replay %q lacks %s", where, line, c.want)
				}
			}
		})
	}
}

// lineWith returns the first line of s that starts with prefix.
func lineWith(s, prefix string) string {
	for l := range strings.Lines(s) {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestBinaryVersionAndQuietRedis: --version prints a version and exits 0;
// an unreachable Redis gives the CLI's hint without a raw go-redis log
// line before it.
func TestBinaryVersionAndQuietRedis(t *testing.T) {
	bin := buildCLI(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 2 || f[0] != "idembench" || (f[1] != "devel" && !strings.HasPrefix(f[1], "v")) {
		t.Errorf("--version: %q, %v; want \"idembench devel\" or a module version", out, err)
	}
	cmd := exec.Command(bin, "run", "--backend", "redis", "--redis-url", "redis://127.0.0.1:1/0", "--no-save", "--duration", "1s")
	out, _ = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitEnvironment {
		t.Errorf("unreachable redis: exit %d, want %d\n%s", code, exitEnvironment, out)
	}
	if strings.Contains(string(out), "pool.go") || !strings.Contains(string(out), "redis unreachable") {
		t.Errorf("unreachable redis: want the hint and no go-redis log line:\n%s", out)
	}
}

// TestCleanFlags: clean needs exactly one of --all and --older-than, and
// --dry-run reports without deleting (only a dry run here: the servers are
// shared with other tests).
func TestCleanFlags(t *testing.T) {
	cases := []struct {
		args []string
		want int
		out  string
	}{
		{[]string{"clean"}, exitUsage, "exactly one of --all and --older-than"},
		{[]string{"clean", "--all", "--older-than", "1h"}, exitUsage, "exactly one of --all and --older-than"},
		{[]string{"clean", "--older-than", "87600h", "--dry-run", "--backends", "redis,postgres", "--redis-url", testenv.RedisURL(t), "--postgres-url", testenv.PostgresURL(t)},
			exitOK, "redis: would delete 0 keys of 0 runs\npostgres: would delete 0 rows of 0 runs\n"},
		{[]string{"clean", "--all", "--dry-run", "--backends", "redis", "--redis-url", "redis://127.0.0.1:1/0"}, exitEnvironment, "tried redis://127.0.0.1:1/0"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := runCLI(t, c.args...)
			if r.code != c.want || !strings.Contains(r.stdout+r.err, c.out) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s%s", r.code, c.want, c.out, r.stdout, r.err)
			}
		})
	}
}

func faultsOf(h *history.History) int {
	n := 0
	for i := range h.Ops {
		if h.Ops[i].Kind == history.KindFault {
			n++
		}
	}
	return n
}

func opsOf(h *history.History) int {
	if h == nil {
		return 0
	}
	return len(h.Ops)
}

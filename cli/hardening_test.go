package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
			checkInterrupted(t, cmd, wait, c.want)
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

// newIdemToy serves testenv's Idempotency-Key toy (with double, a
// double execution per duplicate) for the http command's tests.
func newIdemToy(t *testing.T, double bool) (*testenv.IdemToy, *httptest.Server) {
	t.Helper()
	toy := &testenv.IdemToy{Double: double}
	return toy, testenv.ServeIdemToy(t, toy)
}

// toyTargetFile writes a target file for the service at url, with extra
// YAML lines appended, and returns its path.
func toyTargetFile(t *testing.T, url, extra string) string {
	t.Helper()
	y := "name: toy\nbase_url: " + url + "\n" +
		"operation: {path: /op, body: '{\"amount\": {{.Amount}}}', resource_id: /id, replay_header: Idempotency-Replayed}\n" + extra
	p := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHTTPNoRequestSucceeded: against a target whose every request is
// refused (404, 400) http exits 2, against one that fails them all (503)
// 5, never 1: it says that no request succeeded, how often each status
// came back and what one answer was, and writes no run directory.
func TestHTTPNoRequestSucceeded(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   int
	}{
		{http.StatusNotFound, "404 page not found", exitUsage},
		{http.StatusBadRequest, `{"error":"bad body"}`, exitUsage},
		{http.StatusServiceUnavailable, "maintenance", exitEnvironment},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			target := toyTargetFile(t, srv.URL, "")
			out := filepath.Join(t.TempDir(), "run")
			r := runCLI(t, "http", target, "--seed", "1", "--duration", "300ms", "--clients", "2", "--out", out)
			if r.code != tc.want {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.want, r.stdout, r.err)
			}
			for _, want := range []string{fmt.Sprintf("no request succeeded (%d × ", tc.status), fmt.Sprintf("sample response: %d %q", tc.status, tc.body)} {
				if !strings.Contains(r.err, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.err)
				}
			}
			if strings.Contains(r.stdout+r.err, "verdict") {
				t.Errorf("a run with nothing to check printed a verdict:\n%s%s", r.stdout, r.err)
			}
			if got := dirNames(t, filepath.Dir(out)); len(got) != 0 {
				t.Errorf("a run with nothing to check left %v", got)
			}
		})
	}
}

// TestHTTPInputLimits: every flag and the target file are bounded; a
// value out of range, a control byte in the method or a header name and a
// target file over 1 MiB are usage errors (exit 2) that name the flag or
// field and the limit, before any request is sent and before anything is
// written.
func TestHTTPInputLimits(t *testing.T) {
	toy, srv := newIdemToy(t, false)
	good := toyTargetFile(t, srv.URL, "")
	huge := testenv.SparseFile(t, "huge.yaml", 50<<20)
	crlf := toyTargetFile(t, srv.URL, "")
	if err := os.WriteFile(crlf, []byte("name: toy\nbase_url: "+srv.URL+"\noperation: {path: /op, key_header: \"Idempotency-Key\\r\\nX-Admin: 1\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	method := toyTargetFile(t, srv.URL, "")
	if err := os.WriteFile(method, []byte("name: toy\nbase_url: "+srv.URL+"\noperation: {path: /op, method: \"POST\\r\\n\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := toyTargetFile(t, srv.URL, "")
	if err := os.WriteFile(ready, []byte("name: toy\nstart: {command: [true], ready_timeout: 100000h}\noperation: {path: /op}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"probe-after negative", []string{good, "--probe-after=-1s"}, []string{"--probe-after", "negative"}},
		{"probe-after 100h", []string{good, "--probe-after=100h"}, []string{"--probe-after", "above the limit of 10m0s"}},
		{"duration 48h", []string{good, "--duration=48h"}, []string{"--duration", "above the limit of 24h0m0s"}},
		{"duration 0", []string{good, "--duration=0s"}, []string{"--duration", "above 0"}},
		{"clients 0", []string{good, "--clients=0"}, []string{"--clients", "below the minimum of 1"}},
		{"clients 100000", []string{good, "--clients=100000"}, []string{"--clients", "above the limit of 10000"}},
		{"rate negative", []string{good, "--rate=-1"}, []string{"--rate", "negative"}},
		{"rate NaN", []string{good, "--rate=NaN"}, []string{"--rate", "not a finite number"}},
		{"timeout 0", []string{good, "--timeout=0s"}, []string{"--timeout", "below the minimum of 1ms"}},
		{"timeout 1h", []string{good, "--timeout=1h"}, []string{"--timeout", "above the limit of 10m0s"}},
		{"unknown fault", []string{good, "--faults=meteor"}, []string{"--faults", `unknown fault "meteor"`}},
		{"start-arg without start", []string{good, "--start-arg=-v"}, []string{"--start-arg", "no start command"}},
		{"CRLF in key_header", []string{crlf}, []string{"operation.key_header", "not an HTTP token"}},
		{"CRLF in method", []string{method}, []string{"operation.method", "not an HTTP token"}},
		{"ready_timeout 100000h", []string{ready}, []string{"start.ready_timeout", "above the limit of 10m0s"}},
		{"50 MB target file", []string{huge}, []string{"52428800 bytes", "larger than the limit of 1048576 bytes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			before := toy.Calls.Load()
			args := append([]string{"http", "--out", filepath.Join(dir, "out")}, c.args...)
			r := runCLI(t, args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, exitUsage, r.stdout, r.err)
			}
			for _, w := range c.want {
				if !strings.Contains(r.err, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.err)
				}
			}
			if n := toy.Calls.Load() - before; n != 0 {
				t.Errorf("a refused command sent %d requests", n)
			}
			if got := dirNames(t, dir); len(got) != 0 {
				t.Errorf("a refused command wrote %v", got)
			}
		})
	}
}

// TestHTTPOutDirectory: --out is checked before any request (a file, a
// foreign non-empty directory: exit 2, nothing sent, nothing touched), and
// a previous run is replaced whole, with no temporary directory left.
func TestHTTPOutDirectory(t *testing.T) {
	toy, srv := newIdemToy(t, false)
	target := toyTargetFile(t, srv.URL, "conformance: {skip: true}\n")
	work := t.TempDir()
	file := filepath.Join(work, "passwd")
	foreign := foreignDir(t, work)
	if err := os.WriteFile(file, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{{file, "not a directory"}, {foreign, "not an idembench run directory"}} {
		r := runCLI(t, "http", target, "--duration", "2s", "--out", c.out)
		if r.code != exitUsage || !strings.Contains(r.err, c.want) {
			t.Fatalf("--out %s: exit %d, want %d and %q\n%s", c.out, r.code, exitUsage, c.want, r.err)
		}
	}
	if n := toy.Calls.Load(); n != 0 {
		t.Errorf("refused --out: %d requests sent", n)
	}
	if !foreignUntouched(t, foreign) {
		t.Errorf("a refused run wrote into the foreign directory: %v", dirNames(t, foreign))
	}
	if b, _ := os.ReadFile(file); string(b) != "root:x:0:0\n" {
		t.Errorf("a refused run changed the file: %q", b)
	}

	out := filepath.Join(work, "run")
	for i, seed := range []string{"1", "2"} {
		r := runCLI(t, "http", target, "--seed", seed, "--duration", "300ms", "--clients", "2", "--out", out)
		if r.code != exitOK {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, r.code, r.stdout, r.err)
		}
		if !strings.Contains(r.stdout, "report: "+filepath.Join(out, reports.MarkdownFile)) {
			t.Errorf("run %d does not name its report in %s:\n%s", i+1, out, r.stdout)
		}
		if i == 0 { // a file of the first run that the second does not write
			if err := os.WriteFile(filepath.Join(out, "stale.html"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := dirNames(t, out); slices.Contains(got, "stale.html") || !slices.Contains(got, reports.SummaryFile) {
		t.Errorf("the second run did not replace the first whole: %v", got)
	}
	if got := dirNames(t, work); !slices.Equal(got, []string{"foreign", "passwd", "run"}) {
		t.Errorf("temporary directories left beside the run: %v", got)
	}
}

// TestHTTPInterruptExits130: SIGINT during the traffic ends http within 2
// s with exit 130 and run's one line saying what was written: the history
// so far in the run directory, or nothing under --no-save.
func TestHTTPInterruptExits130(t *testing.T) {
	bin := buildCLI(t)
	_, srv := newIdemToy(t, false)
	target := toyTargetFile(t, srv.URL, "")
	work := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
		out  string
	}{
		{"saved", []string{"--out", filepath.Join(work, "run")}, "wrote the history so far to " + filepath.Join(work, "run"), filepath.Join(work, "run")},
		{"no-save", []string{"--no-save"}, "nothing written", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"http", target, "--duration", "1h", "--clients", "2", "--seed", "5"}, c.args...)...)
			checkInterrupted(t, cmd, 1500*time.Millisecond, c.want)
			if c.out == "" {
				return
			}
			b, err := os.ReadFile(filepath.Join(c.out, reports.HistoryFile))
			if err != nil {
				t.Fatalf("run directory: %v", err)
			}
			if h, err := history.Decode(bytes.NewReader(b)); err != nil || len(h.Ops) == 0 {
				t.Errorf("history so far: %d ops, %v; want some", opsOf(h), err)
			}
		})
	}
}

// TestHTTPReportKeepsConformance: `idembench report` on an http run keeps
// the black-box section (oracle, conformance table) of report.md and
// report.html.
func TestHTTPReportKeepsConformance(t *testing.T) {
	_, srv := newIdemToy(t, false)
	target := toyTargetFile(t, srv.URL, "")
	out := filepath.Join(t.TempDir(), "run")
	r := runCLI(t, "http", target, "--seed", "1", "--duration", "300ms", "--clients", "2", "--out", out)
	if r.code != exitOK && r.code != exitViolation && r.code != exitDeviation { // a failed probe is exit 1 or 6
		t.Fatalf("http: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	sections := []string{"## Black-box target", "Effects oracle: **response**", "### Conformance", "| request without the key | `missing-key` | §2.7 |", "| 400 | pass |", "### Report card"}
	check := func(when string) {
		t.Helper()
		md, _ := os.ReadFile(filepath.Join(out, reports.MarkdownFile))
		html, _ := os.ReadFile(filepath.Join(out, reports.HTMLFile))
		for _, want := range sections {
			if !strings.Contains(string(md), want) {
				t.Errorf("%s: report.md lacks %q", when, want)
			}
		}
		if n := strings.Count(string(md), "## Black-box target"); n != 1 {
			t.Errorf("%s: report.md has the black-box section %d times", when, n)
		}
		if !strings.Contains(string(html), "<h2>Black-box target</h2>") {
			t.Errorf("%s: report.html lacks the black-box section", when)
		}
	}
	check("after http")
	if r := runCLI(t, "report", out); r.code != exitOK {
		t.Fatalf("report: exit %d\n%s", r.code, r.err)
	}
	check("after report")
}

// TestHTTPNoSaveViolationLine: under --no-save the line after the first
// violations does not send the reader to a report that was not written;
// with a run directory it names the report.
func TestHTTPNoSaveViolationLine(t *testing.T) {
	_, srv := newIdemToy(t, true)
	target := toyTargetFile(t, srv.URL, "conformance: {skip: true}\n")
	r := runCLI(t, "http", target, "--seed", "1", "--duration", "500ms", "--clients", "2", "--no-save")
	if r.code != exitViolation {
		t.Fatalf("double-executing service: exit %d, want %d\n%s%s", r.code, exitViolation, r.stdout, r.err)
	}
	if strings.Contains(r.stdout, "listed in the report") || !strings.Contains(r.stdout, "no report written under --no-save") {
		t.Errorf("--no-save: the violations line points at a report:\n%s", r.stdout)
	}
	out := filepath.Join(t.TempDir(), "run")
	r = runCLI(t, "http", target, "--seed", "1", "--duration", "500ms", "--clients", "2", "--out", out)
	if want := "listed in " + filepath.Join(out, reports.MarkdownFile); r.code != exitViolation || !strings.Contains(r.stdout, want) {
		t.Errorf("--out: exit %d, stdout lacks %q:\n%s", r.code, want, r.stdout)
	}
}

// TestHTTPJSON: --json prints summary.json's document, and nothing else,
// on stdout; the text goes to stderr.
func TestHTTPJSON(t *testing.T) {
	_, srv := newIdemToy(t, false)
	target := toyTargetFile(t, srv.URL, "conformance: {skip: true}\n")
	r := runCLI(t, "--json", "http", target, "--seed", "1", "--duration", "300ms", "--clients", "2", "--no-save")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	var s reports.Summary
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || dec.More() {
		t.Fatalf("stdout is not one summary document (%v):\n%s", err, r.stdout)
	}
	if s.Verdict != "ok" || s.Counts.Calls == 0 || s.Seed != 1 {
		t.Errorf("summary: verdict %q, %d calls, seed %d", s.Verdict, s.Counts.Calls, s.Seed)
	}
	if !strings.Contains(r.err, "verdict: ok") || !strings.Contains(r.err, "replay: "+invokedAs()+" http") {
		t.Errorf("the text is not on stderr:\n%s", r.err)
	}
}

// checkInterrupted sends cmd SIGINT once it has run for wait and checks that it
// exits within 2 s, with exitInterrupted and "idembench: interrupted: "
// and want on stderr.
func checkInterrupted(t *testing.T, cmd *exec.Cmd, wait time.Duration, want string) {
	t.Helper()
	code, stderr, took := signalCLI(t, cmd, wait, syscall.SIGINT)
	if took > 2*time.Second {
		t.Errorf("exited %s after SIGINT, want within 2 s", took)
	}
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, exitInterrupted, stderr)
	}
	if !strings.Contains(stderr, "idembench: interrupted: "+want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

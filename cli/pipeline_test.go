package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/internal/testenv"
)

// Tests of issue #24, "one run pipeline".

// TestBackendDiesMidRun: a private redis-server the test started on a free
// loopback port, killed with SIGKILL in the middle of a run by no fault of
// the run's plan, exits 5 (environment) and names the server; it is not a
// safety violation (exit 1, I6), and the message does not send the user to
// docker compose (the server was up).
func TestBackendDiesMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis server")
	}
	r := privateRedis(t)
	kill := time.AfterFunc(700*time.Millisecond, func() { _ = syscall.Kill(r.PID(), syscall.SIGKILL) })
	defer kill.Stop()
	res := runCLI(t, "run", "--backend", "redis", "--redis-url", r.URL(), "--scenario", "duplicates", "--duration", "2s",
		"--seed", "3", "--no-save", "--no-progress")
	if res.code != exitEnvironment {
		t.Fatalf("exit %d, want %d\n%s%s", res.code, exitEnvironment, res.stdout, res.err)
	}
	for _, want := range []string{"backend died during the run", r.URL()} {
		if !strings.Contains(res.err, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.err)
		}
	}
	if strings.Contains(res.err, "docker compose") {
		t.Errorf("the hint sends the user to docker compose for a server that was up:\n%s", res.err)
	}
}

// TestEveryFlagBounded: a value past a flag's documented bound is a usage
// error (exit 2) that names the flag, within a moment (the matrix starts
// no server first), with nothing written.
func TestEveryFlagBounded(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		// run (and compare, which shares the workload and threshold flags)
		{[]string{"run", "--client-timeout=-1s"}, "--client-timeout -1s"},
		{[]string{"run", "--client-timeout=11m"}, "--client-timeout 11m0s"},
		{[]string{"run", "--backend", "redis", "--workers", "100000"}, "--workers 100000: want 0 (no worker processes) or 1 to 64"},
		{[]string{"run", "--backend", "redis", "--workers", "4", "--clients", "2"}, "each worker runs at least one client"},
		{[]string{"run", "--workers", "2"}, "--workers needs --backend redis or postgres"},
		{[]string{"run", "--seed=-1"}, "--seed"},
		{[]string{"run", "--seed", "9007199254740992"}, "--seed"},
		{[]string{"run", "--max-p99", "1000h"}, "--max-p99"},
		{[]string{"run", "--min-throughput", "NaN"}, "--min-throughput"},
		{[]string{"run", "--min-throughput", "+Inf"}, "--min-throughput"},
		{[]string{"run", "--max-error-rate", "NaN"}, "--max-error-rate"},
		{[]string{"run", "--backend", "redis", "--restart-at=-1s"}, "--restart-at -1s"},
		{[]string{"run", "--backend", "redis", "--restart-at", "25h"}, "--restart-at 25h0m0s"},
		{[]string{"run", "--restart-at", "1s"}, "need --backend redis or postgres"},
		{[]string{"run", "--backend", "redis", "--aim-restart", "11m"}, "--aim-restart"},
		{[]string{"run", "--backend", "redis", "--net-fault", "partition@1s+11m"}, "LENGTH at most 10m"},
		{[]string{"run", "--backend", "redis", "--net-fault", "partition@1s+1s", "--aim-net", "partition+11m"}, "--aim-net"},
		{[]string{"run", "--failover", "redis-sentinel"}, "--failover redis-sentinel needs --backend redis"},
		{[]string{"run", "--no-save", "--out", "OUT"}, "--out and --no-save"},
		{[]string{"compare", "--backends", "memory,memory"}, "--backends: memory is given twice"},
		{[]string{"compare", "--sinks", "fenced,fenced"}, "--sinks: fenced is given twice"},
		{[]string{"compare", "--seed=-1"}, "--seed"},
		{[]string{"compare", "--max-p99", "1000h"}, "--max-p99"},
		// check
		{[]string{"check", "--timeout=-1s", "nowhere"}, "--timeout -1s: want above 0 and at most 1h0m0s"},
		{[]string{"check", "--timeout=0s", "nowhere"}, "--timeout 0s"},
		{[]string{"check", "--timeout=2h", "nowhere"}, "--timeout 2h0m0s"},
		// sweep
		{[]string{"sweep", "--hi", "NaN"}, "--hi NaN"},
		{[]string{"sweep", "--lo", "+Inf"}, "--lo +Inf"},
		{[]string{"sweep", "--lo", "0.5", "--hi", "0.4"}, "0 < --lo < --hi"},
		{[]string{"sweep", "--hi", "11"}, "--hi 11"},
		{[]string{"sweep", "--steps", "0"}, "--steps 0"},
		{[]string{"sweep", "--steps", "51"}, "--steps 51"},
		{[]string{"sweep", "--step", "100ms"}, "--step 100ms"},
		{[]string{"sweep", "--slo-p99", "0s"}, "--slo-p99 0s"},
		{[]string{"sweep", "--clients", "20000"}, "--clients 20000"},
		{[]string{"sweep", "--clients=-1"}, "--clients -1"},
		{[]string{"sweep", "--backends", "memory,memory"}, "--backends: memory is given twice"},
		{[]string{"sweep", "--seed=-5"}, "--seed -5"},
		{[]string{"sweep", "--scenario", "nope"}, "--scenario"},
		// matrix: checked before any private server starts
		{[]string{"matrix", "--duration=-1s"}, "--duration -1s: want 0 (the scenario's) or 100ms to 1h0m0s"},
		{[]string{"matrix", "--duration", "100h"}, "--duration 100h0m0s"},
		{[]string{"matrix", "--duration", "10ms"}, "--duration 10ms"},
		{[]string{"matrix", "--check-timeout=-1s"}, "--check-timeout -1s"},
		{[]string{"matrix", "--check-timeout", "0s"}, "--check-timeout 0s"},
		{[]string{"matrix", "--check-timeout", "2h"}, "--check-timeout 2h0m0s"},
		{[]string{"matrix", "--seed=-1"}, "--seed -1"},
		{[]string{"matrix", "--backends", "rabbitmq", "--amqp-url", "http://127.0.0.1:1/"}, "--amqp-url"},
		{[]string{"matrix", "--out", "/etc/passwd"}, "--out /etc/passwd: not a directory"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			args := slices.Clone(c.args)
			for i, a := range args {
				if a == "OUT" {
					args[i] = filepath.Join(dir, "out")
				}
			}
			if args[0] != "check" && !slices.Contains(args, "--out") && !slices.Contains(args, "--no-save") {
				args = append(args, "--out", filepath.Join(dir, "out"))
			}
			start := time.Now()
			r := runCLI(t, append(args, "--no-progress")...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, exitUsage, r.stdout, r.err)
			}
			if !strings.Contains(r.err, c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, r.err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("refused after %s: checked too late", took)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a refused command wrote %v", ents)
			}
		})
	}
}

// TestOutRuleEveryCommand: --out into an existing non-empty directory
// that is not idembench's is refused by run, compare, sweep and matrix
// alike (exit 2, the directory untouched); sweep and matrix replace their
// own earlier output whole, through a directory beside it.
func TestOutRuleEveryCommand(t *testing.T) {
	work := t.TempDir()
	foreign := foreignDir(t, work)
	sweepArgs := []string{"sweep", "--step", "500ms", "--steps", "1", "--seed", "2", "--no-progress"}
	matrixArgs := []string{"matrix", "--backends", "memory", "--faults", "dup", "--duration", "200ms", "--seed", "2"}
	for _, args := range [][]string{
		{"run", "--duration", "200ms", "--no-progress"},
		{"compare", "--duration", "200ms", "--no-progress"},
		sweepArgs,
		matrixArgs,
	} {
		r := runCLI(t, append(args, "--out", foreign)...)
		if r.code != exitUsage || !strings.Contains(r.err, "not an idembench run directory") {
			t.Errorf("%s --out foreign: exit %d, want %d and a reason\n%s", args[0], r.code, exitUsage, r.err)
		}
		if !foreignUntouched(t, foreign) {
			t.Fatalf("%s wrote into a foreign directory: %v", args[0], dirNames(t, foreign))
		}
	}
	for _, c := range []struct {
		args []string
		file string
	}{{sweepArgs, "sweep.json"}, {matrixArgs, "matrix.json"}} {
		out := filepath.Join(work, c.args[0])
		for i := range 2 {
			r := runCLI(t, append(c.args, "--out", out)...)
			if r.code != exitOK {
				t.Fatalf("%s #%d: exit %d\n%s", c.args[0], i+1, r.code, r.err)
			}
			if i == 0 { // a stale file the second run must not leave
				if err := os.WriteFile(filepath.Join(out, "stale.txt"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := dirNames(t, out); !slices.Contains(got, c.file) || slices.Contains(got, "stale.txt") {
			t.Errorf("%s --out an earlier output: left %v, want its own files only", c.args[0], got)
		}
	}
	if got := dirNames(t, work); !slices.Equal(got, []string{"foreign", "matrix", "sweep"}) {
		t.Errorf("temporary directories left beside the outputs: %v", got)
	}
}

// TestMatrixJSON: matrix --json prints matrix.json's document alone on
// stdout; the table goes to stderr.
func TestMatrixJSON(t *testing.T) {
	r := runCLI(t, "matrix", "--json", "--backends", "memory", "--faults", "dup", "--duration", "200ms", "--seed", "2")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.err)
	}
	var doc struct {
		Seed  int64 `json:"seed"`
		Cells []struct {
			Observed string `json:"observed"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
	}
	if doc.Seed != 2 || len(doc.Cells) == 0 || doc.Cells[0].Observed == "" {
		t.Errorf("document %+v; want seed 2 and observed cells", doc)
	}
	if !strings.Contains(r.err, "expected") {
		t.Errorf("the table is not on stderr:\n%s", r.err)
	}
}

// interruptCLI starts bin with args in dir, sends it SIGINT after wait,
// and returns its exit code, its stderr and how long it took to exit after
// the signal.
func interruptCLI(t *testing.T, bin, dir string, wait time.Duration, ready string, args ...string) (int, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	return signalWhen(t, cmd, wait, ready, syscall.SIGINT)
}

// signalCLI starts cmd, sends it sig after wait, and returns its exit
// code, its stderr and how long it took to exit after the signal. A
// command still running 10 s after the signal is killed and fails t.
func signalCLI(t *testing.T, cmd *exec.Cmd, wait time.Duration, sig os.Signal) (int, string, time.Duration) {
	t.Helper()
	return signalWhen(t, cmd, wait, "", sig)
}

// signalWhen is signalCLI that, when ready is set, also waits (up to a
// minute) until stderr or stdout holds ready before it sends sig: a fixed wait is
// too short on a loaded machine for a step that must be done by then.
func signalWhen(t *testing.T, cmd *exec.Cmd, wait time.Duration, ready string, sig os.Signal) (int, string, time.Duration) {
	t.Helper()
	var stderr, stdout lockedBuffer
	cmd.Stderr = &stderr
	if cmd.Stdout == nil {
		cmd.Stdout = &stdout
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	for deadline := time.Now().Add(time.Minute); ready != "" && !strings.Contains(stderr.String()+stdout.String(), ready); {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("%v: no %q on stderr within a minute\n%s", cmd.Args, ready, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still running 10 s after %v\n%s", cmd.Args, sig, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), time.Since(sent)
}

// lockedBuffer is a bytes.Buffer a command writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInterruptEveryCommand: SIGINT ends matrix, sweep, check and compare
// within 2 s with exit 130 and the one line of interrupted(dir), which
// names the final directory (never a temporary one), and keeps what was
// done: the matrix's cells and the sweep's steps so far, the runs of a
// comparison so far.
func TestInterruptEveryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary for several seconds per command")
	}
	bin := buildCLI(t)
	work := t.TempDir()
	stuck := stuckScenario(t, work)
	fifoRun := filepath.Join(work, "fifo-run")
	if err := os.MkdirAll(fifoRun, 0o755); err != nil {
		t.Fatal(err)
	}
	// A history that never arrives: the check is still reading when the
	// signal comes (a slow disk or a huge file).
	if err := syscall.Mkfifo(filepath.Join(fifoRun, "history.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		wait  time.Duration
		ready string // what the output must hold before the signal, if any
		args  []string
		line  string // what the one line says, after "idembench: interrupted: "
		file  string // a file the output must hold, if any
	}{
		{"matrix", time.Second, "[ 1/6]", []string{"matrix", "--backends", "memory", "--faults", "dup,pause", "--duration", "1s", "--seed", "3", "--out", "m"},
			"wrote the cells run so far to m", "m/matrix.json"},
		{"sweep", time.Second, "closed loop: achieved", []string{"sweep", "--step", "2s", "--steps", "8", "--seed", "3", "--out", "s"},
			"wrote the steps run so far to s", "s/sweep.json"},
		{"check", time.Second, "", []string{"check", fifoRun}, "nothing written", ""},
		{"compare", 1500 * time.Millisecond, "", []string{"compare", "--scenario", stuck, "--seed", "3", "--no-progress", "--out", "c"},
			"wrote the runs so far to c (not compared)", "c/memory/history.jsonl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stderr, took := interruptCLI(t, bin, work, c.wait, c.ready, c.args...)
			if code != exitInterrupted {
				t.Errorf("exit %d, want %d\n%s", code, exitInterrupted, stderr)
			}
			if took > 2*time.Second {
				t.Errorf("exited %s after SIGINT, want within 2 s", took)
			}
			if n := strings.Count(stderr, "interrupted"); n != 1 || !strings.Contains(stderr, "idembench: interrupted: "+c.line) {
				t.Errorf("stderr has %d lines about the interrupt, want the one saying %q:\n%s", n, c.line, stderr)
			}
			if strings.Contains(stderr, tmpInfix) {
				t.Errorf("stderr names a temporary directory:\n%s", stderr)
			}
			if c.file != "" && !exists(filepath.Join(work, c.file)) {
				t.Errorf("%s missing: the partial results were not kept", c.file)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(work, "m", "matrix.json"))
	if err == nil && !strings.Contains(string(b), `"observed"`) {
		t.Errorf("the interrupted matrix kept no cell:\n%s", b)
	}
	b, err = os.ReadFile(filepath.Join(work, "s", "sweep.json"))
	if err == nil && !strings.Contains(string(b), `"closed_loop"`) {
		t.Errorf("the interrupted sweep kept no step:\n%s", b)
	}
}

// privateRedis starts a private redis-server for the rest of t; without
// the binary the test is skipped (failed with IDEM_REQUIRE_BACKENDS=1).
func privateRedis(t *testing.T) *servers.Redis {
	t.Helper()
	r, err := servers.StartRedis(t.Context(), servers.RedisOptions{})
	if errors.Is(err, servers.ErrNotFound) && !testenv.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

// TestBackendURLMistakes: a server that answers and refuses the URL's
// password, user or database is a usage error (exit 2) that says what to
// change in the URL, not "unreachable" with a docker compose hint.
func TestBackendURLMistakes(t *testing.T) {
	r := privateRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: r.Addr()})
	if err := rc.ConfigSet(t.Context(), "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	pg, err := url.Parse(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	with := func(user, db string) string {
		u := *pg
		if user != "" {
			u.User = url.User(user)
		}
		if db != "" {
			u.Path = "/" + db
		}
		return u.String()
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "redis", "--redis-url", "redis://:wrong@" + r.Addr() + "/0"}, "refused the user name or password of the URL (WRONGPASS"},
		{[]string{"--backend", "redis", "--redis-url", "redis://" + r.Addr() + "/0"}, "wants a password and the URL has none"},
		{[]string{"--backend", "redis", "--redis-url", "redis://:s3cret@" + r.Addr() + "/99"}, "has no database of the number the URL ends with"},
		{[]string{"--backend", "postgres", "--postgres-url", with("idembench_no_such_role", "")}, "refused the user of the URL"},
		{[]string{"--backend", "postgres", "--postgres-url", with("", "idembench_no_such_db")}, "has no such database"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			res := runCLI(t, append([]string{"run", "--no-save", "--no-progress", "--duration", "200ms"}, c.args...)...)
			if res.code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s", res.code, exitUsage, res.err)
			}
			if !strings.Contains(res.err, c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, res.err)
			}
			if strings.Contains(res.err, "unreachable") || strings.Contains(res.err, "docker compose") {
				t.Errorf("a server that answered is reported unreachable:\n%s", res.err)
			}
		})
	}
}

// TestCompareCorruptSummary: comparing a saved run whose summary.json
// cannot be read says what to run (idembench report --recheck DIR), not a
// library's option name.
func TestCompareCorruptSummary(t *testing.T) {
	ok, _ := runDirs(t)
	if err := os.WriteFile(filepath.Join(ok, "summary.json"), []byte("{bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "compare", ok, "--out", filepath.Join(t.TempDir(), "cmp"))
	if r.code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitUsage, r.err)
	}
	if want := "idembench report --recheck " + ok; !strings.Contains(r.err, want) || strings.Contains(r.err, "set Recheck") {
		t.Errorf("stderr does not say to run %q:\n%s", want, r.err)
	}
}

// TestReportCorruptSummary: report on a run whose summary.json cannot be
// read says to rerun it with --recheck, not a library's option name
// ("set Recheck"), and exits 2.
func TestReportCorruptSummary(t *testing.T) {
	ok, _ := runDirs(t)
	if err := os.WriteFile(filepath.Join(ok, "summary.json"), []byte("{bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "report", ok)
	if r.code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitUsage, r.err)
	}
	if want := "idembench report --recheck " + ok; !strings.Contains(r.err, want) || strings.Contains(r.err, "set Recheck") {
		t.Errorf("stderr does not say to run %q:\n%s", want, r.err)
	}
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// cliResult is what one realMain call printed and returned.
type cliResult struct {
	code        int
	stdout, err string
}

// runCLI runs idembench with args in-process.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errb strings.Builder
	code := Run(context.Background(), args, &out, &errb, engines.Builtin()...)
	return cliResult{code: code, stdout: out.String(), err: errb.String()}
}

// runDirs writes two short memory runs of the duplicates scenario into a
// temporary directory: one safe, one with a known-bad engine (violation).
func runDirs(t *testing.T) (ok, bad string) {
	t.Helper()
	dir := t.TempDir()
	for name, engine := range map[string]string{"ok": harness.ReferenceEngine, "bad": "naive/cache-on-success"} {
		if r := runCLI(t, "run", "--scenario", "duplicates", "--engine", engine, "--seed", "3", "--duration", "300ms",
			"--out", filepath.Join(dir, name), "--no-progress"); r.code != exitOK && r.code != exitViolation {
			t.Fatalf("run %s: exit %d\n%s", name, r.code, r.err)
		}
	}
	return filepath.Join(dir, "ok"), filepath.Join(dir, "bad")
}

func TestReportRegenerates(t *testing.T) {
	t.Parallel() // in-process runs share nothing; CI time
	ok, bad := runDirs(t)
	regenerated := []string{reports.SummaryFile, reports.MarkdownFile, reports.HTMLFile,
		reports.LatencyPlot + ".png", reports.ThroughputPlot + ".png", reports.LatencyOverTimePlot + ".png"}
	cases := []struct {
		name string
		args []string
		dir  string
		// dropSummary removes summary.json too before the command.
		dropSummary bool
		want        int
		out         string
	}{
		{"keeps verdict", []string{"report", ok}, ok, false, exitOK, "verdict: OK (verdict kept from summary.json)"},
		{"violation kept, exit 0", []string{"report", bad}, bad, false, exitOK, "verdict: VIOLATION (verdict kept from summary.json)"},
		{"recheck exits with the verdict", []string{"report", "--recheck", bad}, bad, false, exitViolation, "re-checked"},
		{"no summary: checked, exits with the verdict", []string{"report", bad}, bad, true, exitViolation, "verdict: VIOLATION (checked: no summary.json in the directory)"},
		{"no summary, ok", []string{"report", ok}, ok, true, exitOK, "verdict: OK (checked: no summary.json in the directory)"},
		{"missing dir", []string{"report", filepath.Join(ok, "nope")}, "", false, exitUsage, "nope"},
		{"no history", []string{"report", t.TempDir()}, "", false, exitUsage, "history.jsonl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.dir != "" {
				for _, f := range regenerated {
					if f == reports.SummaryFile && !c.dropSummary {
						continue
					}
					if err := os.Remove(filepath.Join(c.dir, f)); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
				}
			}
			r := runCLI(t, c.args...)
			if r.code != c.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, c.want, r.stdout, r.err)
			}
			if !strings.Contains(r.stdout+r.err, c.out) {
				t.Fatalf("output lacks %q:\n%s%s", c.out, r.stdout, r.err)
			}
			if c.dir == "" {
				return
			}
			for _, f := range regenerated {
				if _, err := os.Stat(filepath.Join(c.dir, f)); err != nil {
					t.Errorf("%s not regenerated: %v", f, err)
				}
			}
		})
	}
}

// TestCompareSinks runs gc-pause with the fenced and the plain sink: the
// table shows both, plain is caught, and the comparison exits 1.
func TestCompareSinks(t *testing.T) {
	t.Parallel() // in-process runs share nothing; CI time
	out := t.TempDir()
	r := runCLI(t, "compare", "--sinks", "fenced,plain", "--scenario", "gc-pause",
		"--duration", "1s", "--seed", "3", "--out", out, "--no-progress")
	if r.code != exitViolation {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitViolation, r.stdout, r.err)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "p99.9 (ms)") {
		t.Fatalf("want a header and two rows on stdout, got:\n%s", r.stdout)
	}
	for _, want := range []struct{ label, verdict string }{{"memory fenced", "ok"}, {"memory plain", "violation"}} {
		found := false
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, want.label+" ") && strings.Fields(l)[2] == want.verdict {
				found = true
			}
		}
		if !found {
			t.Errorf("no row %q with verdict %s:\n%s", want.label, want.verdict, r.stdout)
		}
	}
	for _, f := range []string{reports.CompareMarkdownFile, reports.CompareLatencyPlot + ".png", reports.CompareThroughputPlot + ".png",
		"memory_fenced/" + reports.SummaryFile, "memory_plain/" + reports.HistoryFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("compare did not write %s: %v", f, err)
		}
	}
}

// TestCompareThreshold: a threshold no run can meet exits 4 and names the
// figure and the limit.
func TestCompareThreshold(t *testing.T) {
	r := runCLI(t, "compare", "--scenario", "duplicates", "--duration", "300ms", "--seed", "3",
		"--min-throughput", "1e12", "--out", t.TempDir(), "--no-progress")
	if r.code != exitThreshold {
		t.Fatalf("exit %d, want %d\nstderr: %s", r.code, exitThreshold, r.err)
	}
	if !strings.Contains(r.err, "threshold missed: throughput") || !strings.Contains(r.err, "below the minimum") {
		t.Fatalf("stderr does not name the figure and the threshold:\n%s", r.err)
	}
}

func TestCompareUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		out  string
	}{
		{"bad backend", []string{"compare", "--backends", "memory,mongo"}, "--backends"},
		{"bad sink", []string{"compare", "--sinks", "fenced,wet"}, "--sinks"},
		{"bad engine", []string{"compare", "--engines", "naive/nope"}, "--engines"},
		{"bad scenario", []string{"compare", "--scenario", "nope"}, "--scenario"},
		{"naive on servers only", []string{"compare", "--backends", "redis", "--engines", "naive/no-expiry"}, "nothing to run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, append(c.args, "--out", t.TempDir())...)
			if r.code != exitUsage || !strings.Contains(r.err, c.out) {
				t.Fatalf("exit %d (want %d), stderr lacks %q?\n%s", r.code, exitUsage, c.out, r.err)
			}
		})
	}
}

// TestJSONOutputs: under --json, stdout of every command is one JSON
// document with the expected fields.
func TestJSONOutputs(t *testing.T) {
	t.Parallel() // in-process runs share nothing; CI time
	ok, bad := runDirs(t)
	cases := []struct {
		name string
		args []string
		want int
		// check inspects the decoded document.
		check func(t *testing.T, doc any)
	}{
		{"run", []string{"run", "--json", "--scenario", "duplicates", "--duration", "300ms", "--seed", "3", "--no-save"}, exitOK, field("verdict", "ok")},
		{"check", []string{"check", "--json", bad}, exitViolation, field("verdict", "violation")},
		{"report", []string{"report", "--json", ok}, exitOK, field("verdict", "ok")},
		{"compare saved runs", []string{"compare", "--json", ok, bad, "--out", t.TempDir()}, exitViolation, func(t *testing.T, doc any) {
			runs, _ := doc.(map[string]any)["runs"].([]any)
			if len(runs) != 2 || runs[0].(map[string]any)["verdict"] != "ok" || runs[1].(map[string]any)["verdict"] != "violation" {
				t.Fatalf("runs: %v", runs)
			}
		}},
		{"sweep", []string{"sweep", "--json", "--step", "500ms", "--steps", "1", "--seed", "2", "--no-progress", "--out", filepath.Join(t.TempDir(), "sw")}, exitOK, func(t *testing.T, doc any) {
			curves, _ := doc.(map[string]any)["curves"].([]any)
			if len(curves) != 1 || doc.(map[string]any)["seed"] != 2.0 {
				t.Fatalf("sweep document: %v", doc)
			}
			// Each step's replay names the program that ran, not "idembench".
			if b, _ := json.Marshal(doc); !strings.Contains(string(b), `"replay":"`+invokedAs()+" run ") {
				t.Errorf("sweep document's replay lines do not start with %q: %s", invokedAs(), b)
			}
		}},
		{"scenarios", []string{"scenarios", "--json"}, exitOK, func(t *testing.T, doc any) {
			if list, _ := doc.([]any); len(list) != len(scenarios.Names()) {
				t.Fatalf("%d scenarios, want %d", len(list), len(scenarios.Names()))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.args...)
			if r.code != c.want {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, c.want, r.err)
			}
			var doc any
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if dec.More() {
				t.Fatalf("stdout holds more than one JSON document:\n%s", r.stdout)
			}
			c.check(t, doc)
		})
	}
}

// field checks that a JSON object has key set to want.
func field(key, want string) func(*testing.T, any) {
	return func(t *testing.T, doc any) {
		t.Helper()
		if m, _ := doc.(map[string]any); m[key] != want {
			t.Fatalf("%s = %v, want %q", key, m[key], want)
		}
	}
}

func TestScenariosListsEveryBuiltin(t *testing.T) {
	r := runCLI(t, "scenarios")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	names := scenarios.Names()
	if len(lines) != len(names) {
		t.Fatalf("%d lines for %d scenarios:\n%s", len(lines), len(names), r.stdout)
	}
	for i, name := range names {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[0] != name || f[1] != "—" {
			t.Errorf("line %d: want %q — description, got %q", i, name, lines[i])
		}
	}
}

// TestUnreachableBackendHint: a server backend that does not answer exits
// 5 and says what to run; compare goes on with the other backends.
func TestUnreachableBackendHint(t *testing.T) {
	t.Setenv(envRedisURL, "redis://127.0.0.1:1/0")
	t.Setenv(envPostgresURL, "postgres://postgres@127.0.0.1:1/none?connect_timeout=2")
	cases := []struct {
		name string
		args []string
		out  []string
	}{
		{"run redis", []string{"run", "--backend", "redis", "--no-save"}, []string{"redis unreachable", "from IDEM_REDIS_URL", "docker compose up -d", "export IDEM_REDIS_URL=redis://127.0.0.1:6379/0"}},
		{"run postgres", []string{"run", "--backend", "postgres", "--no-save"}, []string{"postgres unreachable", "from IDEM_POSTGRES_URL", "docker compose up -d", "export IDEM_POSTGRES_URL="}},
		{"compare", []string{"compare", "--backends", "memory,redis", "--scenario", "duplicates", "--out", t.TempDir()}, []string{"memory", "redis: not run", "docker compose up -d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, append(c.args, "--duration", "300ms", "--seed", "3", "--no-progress")...)
			if r.code != exitEnvironment {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitEnvironment, r.stdout, r.err)
			}
			for _, want := range c.out {
				if !strings.Contains(r.stdout+r.err, want) {
					t.Errorf("output lacks %q:\n%s%s", want, r.stdout, r.err)
				}
			}
		})
	}
}

func TestResolveBackendURL(t *testing.T) {
	t.Setenv(envRedisURL, "redis://from-env:6379/0")
	t.Setenv(envPostgresURL, "")
	cases := []struct {
		backend, flag, want, source string
	}{
		{"redis", "", composeRedisURL, "docker-compose"},
		{"redis", "redis://from-env:6379/0", "redis://from-env:6379/0", envRedisURL},
		{"redis", "redis://flag:1/0", "redis://flag:1/0", "--redis-url"},
		{"postgres", "", composePostgresURL, "docker-compose"},
		{"postgres", "postgres://x@y/z", "postgres://x@y/z", "--postgres-url"},
		{"memory", "", "", ""},
	}
	for _, c := range cases {
		u := resolveBackendURL(c.backend, c.flag, c.flag)
		if u.url != c.want || !strings.Contains(u.source, c.source) {
			t.Errorf("resolveBackendURL(%s, %q) = %+v, want %s from %s", c.backend, c.flag, u, c.want, c.source)
		}
	}
}

func TestWorseExit(t *testing.T) {
	cases := []struct{ a, b, want int }{
		{exitOK, exitOK, exitOK},
		{exitOK, exitThreshold, exitThreshold},
		{exitEnvironment, exitViolation, exitViolation},
		{exitViolation, exitEnvironment, exitViolation},
		{exitInconclusive, exitEnvironment, exitEnvironment},
		{exitUsage, exitEnvironment, exitUsage},
	}
	for _, c := range cases {
		if got := worseExit(c.a, c.b); got != c.want {
			t.Errorf("worseExit(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestExitCodes pins the one mapping from errors to exit codes.
func TestExitCodes(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{codeError(exitViolation, "x"), exitViolation},
		{codeError(exitInconclusive, "x"), exitInconclusive},
		{codeError(exitThreshold, "x"), exitThreshold},
		{codeError(exitEnvironment, "x"), exitEnvironment},
		{codeError(exitUsage, "x"), exitUsage},
		{harness.ConfigError("bad"), exitUsage},
		{harness.EnvironmentError(errors.New("down")), exitEnvironment},
		{fmt.Errorf("wrapped: %w", harness.EnvironmentError(errors.New("down"))), exitEnvironment},
		{verdictError("violation"), exitViolation},
		{verdictError("ok"), exitOK},
		{verdictError("unchecked"), exitOK},
		{errors.New("unknown"), exitUsage},
		{fmt.Errorf("--rate: %w", scenarios.ErrInvalid), exitUsage},
		{fmt.Errorf("x: %w", &workload.FieldError{Field: "clients", Problem: "too many"}), exitUsage},
		{fmt.Errorf("x: %w", chaos.ErrLimit), exitUsage},
		{harness.EnvironmentError(fmt.Errorf("x: %w", scenarios.ErrInvalid)), exitUsage},
		{interrupted(""), exitInterrupted},
		{context.Canceled, exitInterrupted},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestRunErrorOfLibraries: a library run's error (consume.Run's here) goes
// through the one path of run, http and consume: noVerdict says whether a
// run directory is kept, runError gives the exit code through checker's
// table, and the message is the error's own.
func TestRunErrorOfLibraries(t *testing.T) {
	notDrained := fmt.Errorf("%w: 3 of 20 copies settled after 1s", consume.ErrNotDrained)
	cases := []struct {
		err       error
		noVerdict bool
		want      int
	}{
		{nil, false, exitOK},
		{fmt.Errorf("%w: sink %q (want fenced or plain)", consume.ErrConfig, "x"), true, exitUsage},
		{fmt.Errorf("%w: RabbitMQ connection died", consume.ErrBroker), true, exitEnvironment},
		{notDrained, false, exitThreshold},
		{errors.Join(notDrained, errors.New("dead letters: timeout")), false, exitThreshold},
		{errors.New("no class"), true, exitEnvironment},
		{harness.ConfigError("--out: not a run directory"), true, exitUsage},
	}
	for _, c := range cases {
		if got := noVerdict(c.err); got != c.noVerdict {
			t.Errorf("noVerdict(%v) = %t, want %t", c.err, got, c.noVerdict)
		}
		err := runError(c.err)
		if got := exitCode(err); got != c.want {
			t.Errorf("exitCode(runError(%v)) = %d, want %d", c.err, got, c.want)
		}
		if c.err != nil && err.Error() != c.err.Error() {
			t.Errorf("runError(%q) says %q", c.err, err)
		}
	}
}

// TestCustomEngineOnServers: an engine registered through the public API
// runs on every backend it supports, with the URL of the flags and a
// per-run key prefix in its Env.
func TestCustomEngineOnServers(t *testing.T) {
	var prefixes []string
	ref := engines.Reference()
	mine := harness.StoreFactory{Name: "mine", Open: func(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
		prefixes = append(prefixes, env.Prefix)
		return ref.Open(ctx, env)
	}}
	for _, c := range []struct{ backend, flag, url string }{
		{"redis", "--redis-url", testenv.RedisURL(t)},
		{"postgres", "--postgres-url", testenv.PostgresURL(t)},
	} {
		var out, errb strings.Builder
		code := Run(context.Background(), []string{"run", "--engine", "mine", "--backend", c.backend, c.flag, c.url,
			"--scenario", "duplicates", "--duration", "300ms", "--seed", "3", "--no-save", "--no-progress"}, &out, &errb, append(engines.Builtin(), mine)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", c.backend, code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), "engine mine") || !strings.Contains(out.String(), "--engine mine") {
			t.Fatalf("%s: the output does not name the engine or replay it:\n%s", c.backend, out.String())
		}
	}
	if len(prefixes) != 2 || prefixes[0] == "" || prefixes[0] == prefixes[1] {
		t.Fatalf("per-run prefixes %q: want two different, non-empty", prefixes)
	}
}

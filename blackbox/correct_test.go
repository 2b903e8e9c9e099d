package blackbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/workload"
)

// allFaults is one window of every fault that a correct service with any
// store must survive (a kill is not one of them: a service that keeps its
// records in memory forgets them).
var allFaults = []chaos.Fault{
	{Kind: history.FaultDropReplies}, {Kind: history.FaultLatency}, {Kind: history.FaultReset}, {Kind: history.FaultPartition}, {Kind: history.FaultPause},
}

// correctSpec is the workload the correct server must pass: duplicates,
// mismatching bodies, short client timeouts with retries, every fault.
func correctSpec(tg *Target, seed int64) Spec {
	return Spec{
		// Eight clients: a copy or a retry waits its turn in a client (as
		// under idembench run), and a loaded machine must still leave
		// enough keys to check after the faults.
		Target: tg, Seed: seed, Duration: time.Second, Clients: 8,
		Keys:   workload.Keys{Concurrent: 1, Delayed: 1, Delay: 50 * time.Millisecond, MismatchRate: 0.1},
		Retry:  workload.Retry{MaxAttempts: 6, Timeout: time.Second, Backoff: 20 * time.Millisecond},
		Faults: allFaults,
	}
}

// killSpec is correctSpec with a kill and restart of the server as well,
// for the example on a durable store, which recovers from it
// (examples/httpserver/recovery.go): the liveness probe waits past the
// server's 1 s lease, and the provider's 20 ms latency keeps charges in
// flight, so that the kill finds keys between their charge and their
// record.
func killSpec(tg *Target, seed int64) Spec {
	spec := correctSpec(tg, seed)
	spec.Faults = append(append([]chaos.Fault(nil), allFaults...), chaos.Fault{Kind: history.FaultKill})
	spec.ProbeAfter = 1500 * time.Millisecond
	tg.Oracle.Latency = 20 * time.Millisecond
	return spec
}

// recoveries counts the take-overs the example server recovered a charge
// on in the run directory dir (its log).
func recoveries(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ServiceLogFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), ": recovered charge ")
}

// backendFlags returns the example server's flags for a store.
func backendFlags(t *testing.T, backend string) []string {
	switch backend {
	case "redis":
		return []string{"--backend", "redis", "--redis-url", testenv.RedisURL(t)}
	case "postgres":
		return []string{"--backend", "postgres", "--postgres-url", testenv.PostgresURL(t)}
	}
	return nil
}

func TestCorrectServerPasses(t *testing.T) {
	for _, backend := range []string{"memory", "redis", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			spec := correctSpec(exampleTarget(t, backendFlags(t, backend)...), 7)
			if backend == "memory" {
				spec.Dir = t.TempDir() // writing the reports is the same for every store
			}
			out, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatalf("correct server on %s: %v (violations %+v, conformance %+v)", backend, err, out.Check.Violations, out.Conformance)
			}
			if out.Verdict != "ok" {
				t.Errorf("verdict %q, want ok", out.Verdict)
			}
			st := out.Check.Stats
			t.Logf("checked: %+v", st)
			if st.Calls < 20 || st.Effects < 5 || st.Probes == 0 || st.Faults != len(allFaults) || st.UnknownCalls == 0 {
				t.Errorf("too little was checked (the faults must leave unknown calls): %+v", st)
			}
			for _, p := range out.Conformance {
				if p.Status != ProbePass {
					t.Errorf("probe %s: %s (%s)", p.ID, p.Status, p.Observed)
				}
			}
			if spec.Dir != "" {
				checkRunDir(t, spec.Dir)
			}

		})
	}
}

// TestCorrectServerSweep runs the correct server with every fault on
// IDEM_BLACKBOX_SWEEP seeds on each store, a kill and restart too on
// Redis and PostgreSQL (a memory store dies with the server): no
// violation, no deviation and no inconclusive verdict.
func TestCorrectServerSweep(t *testing.T) {
	n := sweepSeeds(t)
	for _, backend := range []string{"memory", "redis", "postgres"} {
		bad, recovered := 0, 0
		for seed := range int64(n) {
			tg := exampleTarget(t, backendFlags(t, backend)...)
			spec := correctSpec(tg, seed+1)
			if backend != "memory" {
				spec = killSpec(tg, seed+1)
				spec.Dir = t.TempDir()
			}
			out, err := Run(context.Background(), spec)
			if err != nil {
				bad++
				t.Errorf("%s seed %d: %v (violations %+v)", backend, seed+1, err, out.Check.Violations[:min(2, len(out.Check.Violations))])
			}
			if spec.Dir != "" {
				recovered += recoveries(t, spec.Dir)
			}
		}
		if backend == "memory" {
			t.Logf("correct server on memory: %d of %d seeds passed with every fault but kill", n-bad, n)
		} else {
			t.Logf("correct server on %s: %d of %d seeds passed with every fault and a kill; %d charge(s) recovered after the kills", backend, n-bad, n, recovered)
		}
	}
}

// TestKillRestart kills the service mid-run and restarts it: the example
// server keeps its records in memory, so keys delivered again after the
// restart execute again, and the harness must find the double charge.
func TestKillRestart(t *testing.T) {
	spec := Spec{
		Target: exampleTarget(t), Seed: 3, Duration: time.Second, Clients: 4,
		Keys:   workload.Keys{Delayed: 1, Delay: 500 * time.Millisecond},
		Retry:  workload.Retry{MaxAttempts: 8, Timeout: 300 * time.Millisecond, Backoff: 50 * time.Millisecond},
		Faults: []chaos.Fault{{Kind: history.FaultKill, Start: 300 * time.Millisecond, Duration: 100 * time.Millisecond}},
	}
	out, err := Run(context.Background(), spec)
	if checker.ExitCode(err) != checker.ExitViolation {
		t.Fatalf("err %v, want a violation (records lost by the restart)", err)
	}
	if out.Check.Result("I1").Violations == 0 {
		t.Errorf("no I1 violation: %v", out.Check.Violated())
	}
	if out.Check.Stats.Faults != 1 {
		t.Errorf("fault windows %d, want 1", out.Check.Stats.Faults)
	}
}

// npmModules installs examples/npmservice's dependencies (npm ci, from its
// lockfile) once per lockfile into the user's cache directory and returns
// the node_modules directory. It skips the test when node or npm is not in
// PATH.
func npmModules(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not in PATH: examples/npmservice (express-idempotency) not checked", tool)
		}
	}
	lock, err := os.ReadFile("../examples/npmservice/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile("../examples/npmservice/package.json")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	dir := filepath.Join(cache, "idembench", "npmservice-"+hex.EncodeToString(sum[:6]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "express-idempotency", "package.json")); err == nil {
		return modules
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "npmservice-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci for examples/npmservice: %v\n%s", err, out)
	}
	// Another test process may have installed it meanwhile: either copy
	// is the same lockfile's.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(modules, "express-idempotency", "package.json")); serr != nil {
			t.Fatal(err)
		}
	}
	return modules
}

// npmTarget loads examples/npmservice/target.yaml, with extra arguments
// appended to its command; it runs from the repository root.
func npmTarget(t *testing.T, modules string, extra ...string) *Target {
	t.Helper()
	tg, err := LoadTarget("../examples/npmservice/target.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg.Start.Dir = ".."
	tg.Start.Env = map[string]string{"NODE_PATH": modules}
	tg.Start.Command = append(tg.Start.Command, extra...)
	return tg
}

// redisRace is the run that finds the Redis adapter's racy claim: eight
// clients, each request with two concurrent copies, no probes.
func redisRace(tg *Target, seed int64) Spec {
	tg.Conformance.Skip = true
	return Spec{
		Target: tg, Seed: seed, Duration: time.Second, Clients: 8,
		Keys:  workload.Keys{Concurrent: 2, Delayed: 1, Delay: 30 * time.Millisecond},
		Retry: workload.Retry{MaxAttempts: 6, Timeout: 500 * time.Millisecond, Backoff: 20 * time.Millisecond},
	}
}

// redisKill is the run that finds keys the Redis adapter leaves in
// progress after a crash: the service is killed half-way, while its
// requests, each of a new key, hold their keys through a provider call of
// 400 ms.
func redisKill(tg *Target, seed int64) Spec {
	sp := redisRace(tg, seed)
	tg.Oracle.Latency = 400 * time.Millisecond
	sp.Clients, sp.Keys = 4, workload.Keys{}
	sp.Retry.Timeout = time.Second
	sp.Faults = []chaos.Fault{{Kind: history.FaultKill, Start: 500 * time.Millisecond}}
	return sp
}

// TestNpmService runs examples/npmservice, a service on the npm registry's
// express-idempotency 1.0.6: configured correctly it passes (its one
// deviation from the draft declared), and the library's flaws are caught
// with their class: the Redis adapter's claim (GET, then SET without NX)
// double-charges (I1), the key is not scoped by path (the isolation row),
// and the middleware mounted before the body parser answers different
// requests with the first answer (a false replay of the fuzzer), as does
// the library's own intent validator for {"amount": "100"} after
// {"amount": 100} (loose equality); a key in
// flight when the service is killed stays in progress in Redis for the
// adapter's TTL (24 h by default), so its retries never get an answer
// (I6).
func TestNpmService(t *testing.T) {
	modules := npmModules(t)
	spec := func(tg *Target, seed int64, d time.Duration, faults ...chaos.Fault) Spec {
		return Spec{
			Target: tg, Seed: seed, Duration: d, Clients: 4, FuzzFingerprint: 8, Faults: faults,
			Keys:  workload.Keys{Concurrent: 1, Delayed: 1, Delay: 30 * time.Millisecond, MismatchRate: 0.05},
			Retry: workload.Retry{MaxAttempts: 6, Timeout: 500 * time.Millisecond, Backoff: 20 * time.Millisecond},
		}
	}
	t.Run("correct", func(t *testing.T) {
		out, err := Run(context.Background(), spec(npmTarget(t, modules), 5, time.Second,
			chaos.Fault{Kind: history.FaultDropReplies}, chaos.Fault{Kind: history.FaultPause}))
		if err != nil {
			t.Fatalf("express-idempotency, memory store: %v (violations %+v, conformance %+v)", err, out.Check.Violations, out.Conformance)
		}
		if out.Check.Stats.Effects < 5 {
			t.Errorf("only %d effects recorded", out.Check.Stats.Effects)
		}
		want := map[string]string{ProbeIsolation: ProbeDeviation, ProbeFingerprintSame: ProbePass, ProbeFingerprintDifferent: ProbePass, ProbeMismatch: ProbePass}
		for id, status := range want {
			if r := row(t, out, id); r.Status != status {
				t.Errorf("row %s: %s (%s), want %s", id, r.Status, r.Observed, status)
			}
		}
		for _, c := range out.Fingerprint {
			if c.Variant == "number forms" {
				return
			}
		}
		t.Errorf("no number-forms variant sent, though the target declares numbers: value: %+v", out.Fingerprint)
	})
	t.Run("isolation-undeclared", func(t *testing.T) {
		tg := npmTarget(t, modules)
		tg.Conformance.Deviations = nil
		out, err := Run(context.Background(), Spec{Target: tg, Seed: 6, Duration: 100 * time.Millisecond, Clients: 2})
		if !errors.Is(err, ErrDeviation) {
			t.Fatalf("unscoped keys not reported: err %v, conformance %+v", err, out.Conformance)
		}
		if r := row(t, out, ProbeIsolation); r.Status != ProbeFail {
			t.Errorf("isolation row %+v, want fail", r)
		}
	})
	// The Redis adapter: its claim is no SET NX (racing copies both charge,
	// I1), and a kill leaves its keys in progress for the TTL (I6).
	for _, c := range []struct {
		name string
		spec func(*Target, int64) Spec
		seed int64
		want checker.Invariant
		what string
	}{
		{"redis-claim-without-nx", redisRace, 7, checker.I1AtMostOnce, "keys charged more than once"},
		{"redis-stuck-after-kill", redisKill, 9, checker.I6Liveness, "keys left in progress by a kill"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := npmTarget(t, modules, "--store", "redis", "--redis-url", testenv.RedisURL(t), "--ttl", "60")
			out, err := Run(context.Background(), c.spec(tg, c.seed))
			n := out.Check.Result(c.want).Violations
			if !errors.Is(err, ErrViolation) || n == 0 {
				t.Fatalf("%s not caught as %s: err %v, violated %v", c.what, c.want, err, out.Check.Violated())
			}
			t.Logf("Redis adapter: %d %s", n, c.what)
		})
	}
	t.Run("library-intent-validator", func(t *testing.T) {
		tg := npmTarget(t, modules, "--intent", "library")
		tg.Conformance.Skip = true
		out, err := Run(context.Background(), spec(tg, 10, 200*time.Millisecond))
		if !fuzzFinds(out, err, ProbeFingerprintDifferent, FuzzFalseReplay) {
			t.Fatalf("loose intent validator not caught as a false replay: err %v, conformance %+v", err, out.Conformance)
		}
		for _, c := range out.Fingerprint {
			if c.Result == FuzzFalseReplay && c.Variant != "type changed" {
				t.Errorf("false replay on %+v: only a number sent as a string should get one", c)
			}
		}
	})
	t.Run("mounted-before-body-parser", func(t *testing.T) {
		tg := npmTarget(t, modules, "--mount", "before-body-parser")
		tg.Conformance.Skip = true
		out, err := Run(context.Background(), spec(tg, 8, 200*time.Millisecond))
		// The load may also reuse a key with another body and get the
		// first body's answer back: the same flaw, seen by the checker as
		// an I4 violation, which outranks the deviation in the run's
		// error. The fuzzer's false replay must be found either way.
		if errors.Is(err, ErrViolation) {
			err = ErrDeviation
		}
		if !fuzzFinds(out, err, ProbeFingerprintDifferent, FuzzFalseReplay) {
			t.Fatalf("body-blind mount not caught as a false replay: err %v, conformance %+v", err, out.Conformance)
		}
	})
}

// TestNpmServiceSweep runs examples/npmservice on IDEM_BLACKBOX_SWEEP
// seeds: configured correctly (memory store, dropped replies and a pause,
// the fuzzer) it must pass on every seed; on the Redis adapter its double
// charges must be caught as I1, and the keys a kill leaves in progress as
// I6, each on at least 19 seeds in 20.
func TestNpmServiceSweep(t *testing.T) {
	n := sweepSeeds(t)
	modules := npmModules(t)
	url := testenv.RedisURL(t)
	var clean, caught, stuck int
	for seed := range int64(n) {
		sp := Spec{
			Target: npmTarget(t, modules), Seed: seed + 1, Duration: time.Second, Clients: 4, FuzzFingerprint: 8,
			Faults: []chaos.Fault{{Kind: history.FaultDropReplies}, {Kind: history.FaultPause}},
			Keys:   workload.Keys{Concurrent: 1, Delayed: 1, Delay: 30 * time.Millisecond, MismatchRate: 0.05},
			Retry:  workload.Retry{MaxAttempts: 6, Timeout: 500 * time.Millisecond, Backoff: 20 * time.Millisecond},
		}
		if out, err := Run(context.Background(), sp); err == nil {
			clean++
		} else {
			t.Logf("seed %d, correct configuration: %v; violations %+v; conformance %+v", seed+1, err, out.Check.Violations, out.Conformance)
		}
		out, err := Run(context.Background(), redisRace(npmTarget(t, modules, "--store", "redis", "--redis-url", url, "--ttl", "60"), seed+1))
		if errors.Is(err, ErrViolation) && out.Check.Result(checker.I1AtMostOnce).Violations > 0 {
			caught++
		}
		out, err = Run(context.Background(), redisKill(npmTarget(t, modules, "--store", "redis", "--redis-url", url, "--ttl", "60"), seed+1))
		if errors.Is(err, ErrViolation) && out.Check.Result(checker.I6Liveness).Violations > 0 {
			stuck++
		}
	}
	t.Logf("express-idempotency, memory store: passed on %d of %d seeds", clean, n)
	t.Logf("express-idempotency-redis-adapter: double charges caught as I1 on %d of %d seeds", caught, n)
	t.Logf("express-idempotency-redis-adapter: keys stuck after a kill caught as I6 on %d of %d seeds", stuck, n)
	if clean != n {
		t.Errorf("the correct configuration failed on %d of %d seeds", n-clean, n)
	}
	if caught*20 < n*19 || stuck*20 < n*19 {
		t.Errorf("the Redis adapter's double charges caught on %d, its stuck keys on %d of %d seeds, want at least 19 in 20 each", caught, stuck, n)
	}
}

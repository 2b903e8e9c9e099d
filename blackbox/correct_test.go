package blackbox

import (
	"context"
	"os"
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

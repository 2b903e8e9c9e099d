package blackbox

import (
	"context"
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
// IDEM_BLACKBOX_SWEEP seeds on each store: no violation, no deviation and
// no inconclusive verdict.
func TestCorrectServerSweep(t *testing.T) {
	n := sweepSeeds(t)
	for _, backend := range []string{"memory", "redis", "postgres"} {
		bad := 0
		for seed := range int64(n) {
			out, err := Run(context.Background(), correctSpec(exampleTarget(t, backendFlags(t, backend)...), seed+1))
			if err != nil {
				bad++
				t.Errorf("%s seed %d: %v (violations %+v)", backend, seed+1, err, out.Check.Violations[:min(2, len(out.Check.Violations))])
			}
		}
		t.Logf("correct server on %s: %d of %d seeds passed with faults", backend, n-bad, n)
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

package main

import (
	"context"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
)

// TestMatrixExpectations pins the expected verdicts to VERIFICATION.md's
// safety matrix, with the backend-restart column spelled out.
func TestMatrixExpectations(t *testing.T) {
	cases := []struct {
		config, fault, variant, want string
	}{
		{cfgPlain, faultCrash, "", obsUnsafe},
		{cfgPlain, faultPause, "", obsUnsafe},
		{cfgPlain, faultDup, "", obsSafe},
		{cfgPlain, faultNet, "", obsUnsafe},
		{cfgRecovery, faultNet, "", obsSafe},
		{cfgFenced, faultRestart, "redis aof always", obsUnsafe},
		{cfgFenced, faultRestart, "postgres", obsUnsafe},
		{cfgFenced, faultCrash, "", obsUnsafe},
		{cfgFenced, faultPause, "", obsSafe},
		{cfgFenced, faultPause, "worker processes", obsUnsafe},
		{cfgRecovery, faultPause, "worker processes", obsSafe},
		{cfgRecovery, faultCrash, "", obsSafe},
		{cfgRecovery, faultRestart, "redis no persistence", obsUnsafe},
		{cfgRecovery, faultRestart, "redis aof always", obsSafe},
		{cfgRecovery, faultRestart, "postgres", obsSafe},
		{cfgTx, faultCrash, "", obsSafe},
		{cfgTx, faultPause, "", obsSafe},
		{cfgTx, faultRestart, "postgres", obsSafe},
	}
	for _, c := range cases {
		if got := expected(c.config, c.fault, c.variant); got != c.want {
			t.Errorf("%s × %s %s: expected %s, want %s", c.config, c.fault, c.variant, got, c.want)
		}
	}
	if byChance(cfgFenced, faultCrash, "") || !byChance(cfgFenced, faultNet, "") || byChance(cfgPlain, faultRestart, "redis no persistence") {
		t.Error("byChance: crash after effect and Redis without persistence are always caught; network loss only by chance")
	}
	m := &matrixCmd{Quick: true, Backends: []string{backendMemory, backendRedis, backendPostgres}}
	for _, cell := range m.cells(&privateServers{}) {
		if cell.Config == cfgTx && cell.Backend != backendPostgres {
			t.Errorf("tx cell on %s", cell.Backend)
		}
	}
}

// TestBackendFaults: a Redis restart without persistence during duplicates
// is caught, with AOF always it passes; replies dropped after apply give
// unknown outcomes and no false violation.
func TestBackendFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private Redis servers")
	}
	url := testenv.RedisURL(t) // the network case runs against the configured server
	ctx := context.Background()
	sc, err := scenarios.Load("duplicates")
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, bf *backendFaults) *runOutcome {
		t.Helper()
		o, err := execute(ctx, runSpec{
			Scenario: sc, ScenarioArg: "duplicates", Backend: backendRedis, Engine: engineIdem, Sink: "fenced", Recovery: true,
			Seed: 11, Duration: 1200 * time.Millisecond, Rate: -1, RedisURL: url, CheckTimeout: time.Minute, BackendFaults: bf,
		})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, p := range []servers.Persistence{servers.None, servers.AOFAlways} {
		t.Run("restart-"+p.String(), func(t *testing.T) {
			r, err := servers.StartRedis(ctx, servers.RedisOptions{Persistence: p})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Stop()
			o := run(t, &backendFaults{Redis: r, Restarts: []time.Duration{400 * time.Millisecond, 800 * time.Millisecond}})
			want := checker.VerdictOK
			if p == servers.None {
				want = checker.VerdictViolation
			}
			if o.Report.Verdict != want {
				t.Fatalf("verdict %s, want %s (violated %v)", o.Report.Verdict, want, o.Report.Violated())
			}
			if n := countFaults(o.History); n != 2 {
				t.Fatalf("%d fault windows, want 2 restarts", n)
			}
		})
	}
	t.Run("drop-replies", func(t *testing.T) {
		o := run(t, &backendFaults{RetryTimeout: 200 * time.Millisecond, Net: []netWindow{
			{Fault: netfault.Fault{Kind: netfault.KindDropReplies}, At: 300 * time.Millisecond, For: 400 * time.Millisecond},
		}})
		if o.Report.Verdict != checker.VerdictOK {
			t.Fatalf("verdict %s (violated %v)", o.Report.Verdict, o.Report.Violated())
		}
		if o.Summary.Outcomes["unknown"] == 0 {
			t.Fatal("no unknown outcome while replies were dropped")
		}
		if o.Summary.Outcomes["failed"] != 0 {
			t.Fatalf("%d failed outcomes: a lost reply must be unknown", o.Summary.Outcomes["failed"])
		}
	})
}

func countFaults(h *history.History) int {
	n := 0
	for i := range h.Ops {
		if h.Ops[i].Kind == history.KindFault {
			n++
		}
	}
	return n
}

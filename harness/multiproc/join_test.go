package multiproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// joinChild is a worker started apart from the coordinator, as on another
// host: it joins the run named in the environment through NATS.
func joinChild() {
	reg, err := harness.NewRegistry(engines.Builtin()...)
	if err == nil {
		i, _ := strconv.Atoi(os.Getenv("JOIN_INDEX"))
		err = JoinWorker(context.Background(), Join{URL: os.Getenv("JOIN_URL"), Run: os.Getenv("JOIN_RUN"), Wait: 20 * time.Second}, i,
			map[string]WorkerFunc{RunKind: RunWorker(reg)})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// TestJoinedWorkers runs four workers that the coordinator does not start:
// each is a process started apart, with a clock 50 or 20 ms off, that
// joins the run through NATS JetStream and speaks the worker protocol
// over the run's stream. The run is the same as with local workers: the
// correct engine passes on Redis, with every worker's clock bound in the
// header; a worker index that never joins is an environment error naming
// the command that starts it.
func TestJoinedWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for several seconds")
	}
	natsURL, redisURL := testenv.NATSURL(t), testenv.RedisURL(t)
	sc, err := scenarios.Load("duplicates")
	if err != nil {
		t.Fatal(err)
	}
	skews := []time.Duration{-50 * time.Millisecond, 50 * time.Millisecond, -20 * time.Millisecond, 20 * time.Millisecond}
	sp := harness.Spec{Engine: engines.Reference(), Backend: harness.Redis, URL: redisURL, ScenarioName: sc.Name, Scenario: sc,
		Sink: "fenced", Overrides: harness.Overrides{Seed: 4, Duration: 1500 * time.Millisecond}}
	out := passedJoined(t, natsURL, sp, skews)
	// Keys are sharded by host: every key's calls come from one worker.
	hosts := map[string]int{}
	for _, op := range out.History.Ops {
		if op.Kind != history.KindCall || op.Probe {
			continue
		}
		h := workerOf(out.History, op.Client)
		if prev, ok := hosts[op.Key]; ok && prev != h {
			t.Fatalf("key %s called from workers %d and %d: keys are not sharded by host", op.Key, prev, h)
		}
		hosts[op.Key] = h
	}
	calls, _, _ := out.History.Counts()
	if calls < 100 {
		t.Fatalf("%d calls from four joined workers", calls)
	}
	t.Logf("%d calls; clock bounds %+v", calls, out.History.Header.Clocks)

	// Nobody joins: the run ends with an environment error naming the
	// command to start the missing worker.
	opts := Options{Join: &Join{URL: natsURL, Run: "nobody" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36), Wait: 300 * time.Millisecond},
		ClockSkew: func(i int) time.Duration { return skews[i] }}
	_, err = Run(context.Background(), sp, 2, opts)
	if err == nil || checker.ExitCode(err) != checker.ExitEnvironment {
		t.Fatalf("no worker joined: error %v, want an environment error", err)
	}
	t.Log(err)
}

// joinedRun runs sp with n workers that join run through NATS at natsURL,
// each a process started apart (the test binary in its join mode), and
// waits for them.
func joinedRun(t *testing.T, natsURL string, sp harness.Spec, n int, skews []time.Duration) (*harness.Outcome, error) {
	t.Helper()
	run := "m" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	var procs []*exec.Cmd
	for i := range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"=join", "JOIN_URL="+natsURL, "JOIN_RUN="+run, "JOIN_INDEX="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := Options{Join: &Join{URL: natsURL, Run: run, Wait: 30 * time.Second}, ClockSkew: func(i int) time.Duration { return skews[i] }}
	out, err := Run(ctx, sp, n, opts)
	for i, p := range procs {
		if werr := p.Wait(); werr != nil {
			t.Errorf("worker %d: %v", i, werr)
		}
	}
	return out, err
}

// passedJoined runs sp with a joined worker for each of skews and fails t
// unless the run passed with every worker's clock bound in the header.
func passedJoined(t *testing.T, natsURL string, sp harness.Spec, skews []time.Duration) *harness.Outcome {
	t.Helper()
	out, err := joinedRun(t, natsURL, sp, len(skews), skews)
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Verdict != checker.VerdictOK {
		t.Fatalf("verdict %s: %v", out.Report.Verdict, out.Report.Violations)
	}
	if n := len(out.History.Header.Clocks); n != len(skews) {
		t.Fatalf("%d clock bounds, want %d", n, len(skews))
	}
	return out
}

func memorySpec(t *testing.T, scenario string, seed int64, d time.Duration) harness.Spec {
	t.Helper()
	sc, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	return harness.Spec{Engine: engines.Reference(), Backend: harness.Memory, ScenarioName: sc.Name, Scenario: sc,
		Sink: "fenced", Overrides: harness.Overrides{Seed: seed, Duration: d}}
}

// TestJoinedMemoryWorkers runs four joined workers on the memory backend:
// each owns a memory store and an effect ledger, draws keys of its own
// (sharded by host), and sends its ledger with its history; the
// coordinator checks the merged history against the merged ledgers. The
// correct engine passes the default scenario (crashes and pauses
// injected in each worker's engine) with every ledger's effects
// accounted for, and a known-bad configuration of the gate, crashes after
// the effect without recovery, is caught, its double effects in the
// merged ledger. Workers that share keys, and local workers, are refused
// on memory.
func TestJoinedMemoryWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for several seconds")
	}
	natsURL := testenv.NATSURL(t)
	skews := []time.Duration{-50 * time.Millisecond, 50 * time.Millisecond, -20 * time.Millisecond, 20 * time.Millisecond}

	t.Run("correct", func(t *testing.T) {
		out := passedJoined(t, natsURL, memorySpec(t, "default", 4, 1500*time.Millisecond), skews)
		// Every effect the histories record as applied is one of the
		// merged ledger's, and the other way round (assemble refuses a
		// history whose ledger lacks one; here the counts are compared).
		hostOf := func(client int) int { return workerOf(out.History, client) }
		applied := 0
		for _, op := range out.History.Ops {
			if op.Kind == history.KindEffect && op.Applied {
				applied++
			}
			// Sharded: worker i's keys start with the run's prefix and
			// -h<i>, in its own store (its probe's clients included).
			if op.Kind == history.KindCall && !op.Probe {
				if want := "-h" + strconv.Itoa(hostOf(op.Client)) + "-"; !strings.Contains(op.Key, want) {
					t.Fatalf("key %s called by client %d of worker %d: not one of its keys", op.Key, op.Client, hostOf(op.Client))
				}
			}
		}
		if applied == 0 || out.Ledger.Applied != applied {
			t.Fatalf("%d effects applied in the history, %d in the merged ledger (%+v)", applied, out.Ledger.Applied, out.Ledger)
		}
		calls, _, _ := out.History.Counts()
		if calls < 100 {
			t.Fatalf("%d calls from four memory-backed workers", calls)
		}
		// The replay line runs it again with joined workers: without
		// --join, memory-backed workers are refused.
		if !strings.HasSuffix(out.Replay, " --workers 4 --join "+harness.ShellQuote(natsURL)) {
			t.Errorf("replay %q: want --workers 4 --join %s", out.Replay, natsURL)
		}
		t.Logf("%d calls, %d effects applied, %d fault windows from the workers", calls, applied, faultWindows(out))
	})

	t.Run("caught/crash-after-effect", func(t *testing.T) {
		sp := memorySpec(t, "crash-after-effect", 20260101, 2500*time.Millisecond)
		sp.NoRecovery = true
		out, err := joinedRun(t, natsURL, sp, 4, skews)
		if err != nil {
			t.Fatal(err)
		}
		if out.Report.Verdict != checker.VerdictViolation {
			t.Fatalf("verdict %s, want the violation a local run finds", out.Report.Verdict)
		}
		if out.Ledger.Doubled == 0 {
			t.Fatalf("merged ledger %+v: no key applied twice", out.Ledger)
		}
		if faultWindows(out) == 0 {
			t.Error("no crash window from any worker")
		}
		v := out.Report.Violations[0]
		t.Logf("caught: %d violations (%d keys doubled in the merged ledger), first: %s %s: %s", len(out.Report.Violations), out.Ledger.Doubled, v.Invariant, v.Key, v.Message)
	})

	t.Run("refused", func(t *testing.T) {
		sp := memorySpec(t, "default", 4, time.Second)
		_, err := Run(context.Background(), sp, 2, Options{Join: &Join{URL: natsURL, Run: "unused", SpanKeys: true}})
		if !errors.Is(err, harness.ErrConfig) || !errors.Is(err, ErrSpanKeysMemory) {
			t.Errorf("memory with span keys: %v, want %v", err, ErrSpanKeysMemory)
		}
		_, err = Run(context.Background(), sp, 2, Options{})
		if !errors.Is(err, harness.ErrConfig) || !errors.Is(err, ErrLocalMemory) {
			t.Errorf("memory with local workers: %v, want %v", err, ErrLocalMemory)
		}
	})
}

// workerOf returns the worker whose clients include client in h (its
// header's clock bounds), or -1.
func workerOf(h *history.History, client int) int {
	for _, c := range h.Header.Clocks {
		if client >= c.ClientLo && client < c.ClientHi {
			return c.Worker
		}
	}
	return -1
}

// faultWindows counts the fault windows the workers (or hosts) sent: the
// crashes and pauses they injected in their engines.
func faultWindows(out *harness.Outcome) int {
	n := 0
	for _, op := range out.History.Ops {
		if op.Kind == history.KindFault && op.Worker >= 0 {
			n++
		}
	}
	return n
}

// TestSentLedgerChecked: a history whose workers' ledgers lack an effect
// it records as applied is an environment error, not a verdict; with the
// effect in the ledger it passes, and the ledger's effects are read by
// key or by prefix.
func TestSentLedgerChecked(t *testing.T) {
	var l sentLedger
	l.add([]workload.Applied{{Effect: workload.Effect{Key: "k-h0-1", Exec: "1.1", Token: 3}, At: 10}})
	l.add([]workload.Applied{{Effect: workload.Effect{Key: "k-h1-1", Exec: "9.1", Token: 4}, At: 11}})
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindEffect, Key: "k-h0-1", Exec: "1.1", Applied: true, Call: 9, Return: 10},
		{Kind: history.KindEffect, Key: "k-h1-1", Exec: "9.1", Applied: true, Call: 10, Return: 11},
		{Kind: history.KindEffect, Key: "k-h1-1", Exec: "9.2", Applied: false, Call: 12, Return: 13, Err: "stale"},
	}}
	ctx := context.Background()
	es, err := l.ReadLedger(ctx, "k-h1", nil)
	if err != nil || len(es) != 1 || es[0].Exec != "9.1" {
		t.Fatalf("by prefix: %+v, %v", es, err)
	}
	all, _ := l.ReadLedger(ctx, "", []string{"k-h0-1", "k-h1-1"})
	if err := checkLedgerHolds(h, workload.NewLedgerOf(all)); err != nil {
		t.Fatalf("every applied effect is in the ledger: %v", err)
	}
	err = checkLedgerHolds(h, workload.NewLedgerOf(all[:1]))
	if !errors.Is(err, errLedgerDisagrees) || !errors.Is(err, harness.ErrEnvironment) || !strings.Contains(err.Error(), "k-h1-1") {
		t.Fatalf("a ledger without k-h1-1's effect: %v, want an environment error naming it", err)
	}
}

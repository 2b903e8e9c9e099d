package multiproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
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
	run := "t" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	skews := []time.Duration{-50 * time.Millisecond, 50 * time.Millisecond, -20 * time.Millisecond, 20 * time.Millisecond}
	var procs []*exec.Cmd
	for i := range 4 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"=join", "JOIN_URL="+natsURL, "JOIN_RUN="+run, "JOIN_INDEX="+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	sp := harness.Spec{Engine: engines.Reference(), Backend: harness.Redis, URL: redisURL, ScenarioName: sc.Name, Scenario: sc,
		Sink: "fenced", Overrides: harness.Overrides{Seed: 4, Duration: 1500 * time.Millisecond}}
	opts := Options{Join: &Join{URL: natsURL, Run: run, Wait: 30 * time.Second}, ClockSkew: func(i int) time.Duration { return skews[i] }}
	out, err := Run(context.Background(), sp, 4, opts)
	for i, p := range procs {
		if werr := p.Wait(); werr != nil {
			t.Errorf("worker %d: %v", i, werr)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Verdict != checker.VerdictOK {
		t.Fatalf("verdict %s: %v", out.Report.Verdict, out.Report.Violations)
	}
	if n := len(out.History.Header.Clocks); n != 4 {
		t.Fatalf("%d clock bounds, want 4", n)
	}
	// Keys are sharded by host: every key's calls come from one worker.
	hostOf := func(client int) int {
		for _, c := range out.History.Header.Clocks {
			if client >= c.ClientLo && client < c.ClientHi {
				return c.Worker
			}
		}
		return -1
	}
	hosts := map[string]int{}
	for _, op := range out.History.Ops {
		if op.Kind != history.KindCall || op.Probe {
			continue
		}
		h := hostOf(op.Client)
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
	opts.Join = &Join{URL: natsURL, Run: run + "x", Wait: 300 * time.Millisecond}
	_, err = Run(context.Background(), sp, 2, opts)
	if err == nil || checker.ExitCode(err) != checker.ExitEnvironment {
		t.Fatalf("no worker joined: error %v, want an environment error", err)
	}
	t.Log(err)
}

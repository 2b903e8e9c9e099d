package multiproc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/engines"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/internal/testenv"
	"github.com/idembench/idembench/scenarios"
)

// childEnv selects what the test binary does when it runs as a child
// process of these tests (see TestMain).
const childEnv = "MULTIPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "pauser":
		pauserChild()
	case "worker":
		workerChild()
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", os.Getenv(childEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

// pauserChild is a worker that asks for two pauses, ids 1 and 2 (armed at
// once, 400ms each), at PointAfterFn, and prints how long each ask blocked
// it, in milliseconds. A point other than PointAfterFn asks for nothing.
func pauserChild() {
	p, err := newPauser(context.Background(), []aimedPause{{ID: 2, For: 400 * time.Millisecond}, {ID: 1, For: 400 * time.Millisecond}}, time.Minute)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	p.slack = 300 * time.Millisecond
	p.start()
	t := time.Now()
	p.at(idem.PointBeforeFn, idem.Lease{Key: "k", Token: 3})
	fmt.Println("before-fn", time.Since(t).Milliseconds())
	for range 2 {
		t = time.Now()
		p.at(idem.PointAfterFn, idem.Lease{Key: "k", Token: 3})
		fmt.Println("after-fn", time.Since(t).Milliseconds())
	}
}

// startPauserChild starts a pauserChild with its control pipe and returns
// it with the lines it prints.
func startPauserChild(t *testing.T) (*exec.Cmd, *controlPipe, <-chan string) {
	t.Helper()
	cp, err := newControlPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=pauser")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cp.attach(cmd)
	if err := cmd.Start(); err != nil {
		cp.close()
		t.Fatal(err)
	}
	cp.closeWorkerEnds()
	lines := make(chan string, 8)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, cp, lines
}

// procState returns the state letter of pid in /proc ('T' when stopped),
// or 0 when it cannot be read.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// watchStopped polls pid's state until done and reports whether it was
// seen stopped (false also when /proc is not there).
func watchStopped(pid int, done <-chan struct{}) <-chan bool {
	seen := make(chan bool, 1)
	go func() {
		stopped := false
		for {
			select {
			case <-done:
				seen <- stopped
				return
			case <-time.After(5 * time.Millisecond):
			}
			if procState(pid) == 'T' {
				stopped = true
			}
		}
	}()
	return seen
}

func readLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the child exited early")
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("no line from the child in 20s")
	}
	return ""
}

func millis(t *testing.T, line, want string) int {
	t.Helper()
	var name string
	var ms int
	if _, err := fmt.Sscan(line, &name, &ms); err != nil || name != want {
		t.Fatalf("child printed %q, want %q and milliseconds", line, want)
	}
	return ms
}

// TestAimedPause: a worker asks at PointAfterFn only; the coordinator
// really stops it (seen in /proc as state T) for the pause's length,
// resumes it and answers, and records the window on the key and token; a
// pause the coordinator does not know (or has done) is refused at once;
// serve ends when the worker exits.
func TestAimedPause(t *testing.T) {
	co := &coordinator{pending: map[int]chaos.ProcessPause{1: {For: 400 * time.Millisecond}}, stopMu: make([]sync.Mutex, 1)}
	cmd, cp, lines := startPauserChild(t)
	served := make(chan struct{})
	go func() { defer close(served); co.serve(context.Background(), 0, cmd, cp) }()
	done := make(chan struct{})
	seen := watchStopped(cmd.Process.Pid, done)

	if ms := millis(t, readLine(t, lines), "before-fn"); ms > 100 {
		t.Errorf("PointBeforeFn blocked %dms: it must not ask", ms)
	}
	if ms := millis(t, readLine(t, lines), "after-fn"); ms < 400 {
		t.Errorf("the aimed pause returned after %dms, want at least its 400ms", ms)
	}
	close(done)
	if _, err := os.Stat("/proc/self/stat"); err == nil && !<-seen {
		t.Error("the worker was never seen stopped (state T)")
	}
	// Pause 2 is not the coordinator's: refused, not waited for.
	if ms := millis(t, readLine(t, lines), "after-fn"); ms > 200 {
		t.Errorf("a refused pause blocked %dms", ms)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not end after the worker exited")
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.windows) != 1 {
		t.Fatalf("windows %+v, want one", co.windows)
	}
	w := co.windows[0]
	if w.Kind != history.KindFault || w.Key != "k" || w.Token != 3 || w.Return-w.Call < int64(400*time.Millisecond) {
		t.Errorf("window %+v: want a fault on k, token 3, of at least 400ms", w)
	}
	if len(co.pending) != 0 {
		t.Errorf("pending %v after the pause was done", co.pending)
	}
}

// TestAimedPauseEnds: every wait ends. A coordinator that never answers
// leaves the worker blocked only for the pause plus its slack; a
// coordinator whose run is cancelled during a stop resumes the worker at
// once.
func TestAimedPauseEnds(t *testing.T) {
	t.Run("no answer", func(t *testing.T) {
		cmd, cp, lines := startPauserChild(t)
		defer cp.close() // nobody serves: the requests stay unread
		millis(t, readLine(t, lines), "before-fn")
		for range 2 {
			if ms := millis(t, readLine(t, lines), "after-fn"); ms < 650 || ms > 5000 {
				t.Errorf("unanswered ask blocked %dms, want its 400ms plus the 300ms slack", ms)
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		co := &coordinator{pending: map[int]chaos.ProcessPause{1: {For: time.Hour}}, stopMu: make([]sync.Mutex, 1)}
		cmd, cp, lines := startPauserChild(t)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { co.serve(ctx, 0, cmd, cp) })
		millis(t, readLine(t, lines), "before-fn")
		deadline := time.Now().Add(10 * time.Second)
		for procState(cmd.Process.Pid) != 'T' && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if procState(cmd.Process.Pid) != 'T' {
			cancel()
			t.Fatal("the worker was not stopped")
		}
		cancel()
		if ms := millis(t, readLine(t, lines), "after-fn"); ms > 5000 {
			t.Errorf("a cancelled pause of an hour still blocked %dms", ms)
		}
		millis(t, readLine(t, lines), "after-fn") // pause 2: refused, the run ended
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	})
}

// workerChild is a worker process of TestAimedPauseRun: Worker with the
// built-in engines and the spec in its first argument.
func workerChild() {
	reg, err := harness.NewRegistry(engines.Builtin()...)
	if err == nil {
		err = Worker(context.Background(), os.Args[1], reg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// TestAimedPauseRun runs gc-pause in four worker processes on Redis. With
// a fenced sink and no recovery, a worker stopped right after an effect
// lets a successor in another worker run the effect again under a newer
// token: a violation (the matrix runs the other configurations, on more
// seeds). With recovery the same stops are safe. Each run records its aimed stops as fault windows on a key.
func TestAimedPauseRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for several seconds")
	}
	url := testenv.RedisURL(t)
	opts := Options{Command: func(spec string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], spec)
		cmd.Env = append(os.Environ(), childEnv+"=worker")
		return cmd, nil
	}}
	sc, err := scenarios.Load("gc-pause")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sink       string
		noRecovery bool
		seed       int64
		want       checker.Verdict
	}{
		{"fenced", true, 12, checker.VerdictViolation},
		{"fenced", false, 11, checker.VerdictOK},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/recovery=%t/seed=%d", c.sink, !c.noRecovery, c.seed), func(t *testing.T) {
			sp := harness.Spec{Engine: engines.Reference(), Backend: harness.Redis, URL: url, ScenarioName: sc.Name, Scenario: sc,
				Sink: c.sink, NoRecovery: c.noRecovery, Overrides: harness.Overrides{Seed: c.seed, Duration: 4 * time.Second}}
			out, err := Run(context.Background(), sp, 4, opts)
			if err != nil {
				t.Fatal(err)
			}
			if out.Report.Verdict != c.want {
				t.Errorf("verdict %s, want %s", out.Report.Verdict, c.want)
			}
			aimed := 0
			for _, op := range out.History.Ops {
				if op.Kind == history.KindFault && strings.Contains(op.Label, "aimed after the effect") && op.Key != "" && op.Token > 0 {
					aimed++
				}
			}
			if aimed == 0 {
				t.Error("no aimed SIGSTOP in the history")
			}
		})
	}
}

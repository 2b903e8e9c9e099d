package multiproc

import (
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
	case "join":
		joinChild()
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", os.Getenv(childEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

// pauserChild is a worker that asks for two pauses, ids 1 and 2 (armed at
// once, 400ms each), at PointAfterFn, and tells the coordinator how long
// each ask blocked it, in milliseconds, in "line" events. A point other
// than PointAfterFn asks for nothing.
func pauserChild() {
	conn := NewConn(Stdio())
	go conn.Serve(context.Background(), nil)
	p := newPauser(context.Background(), conn, []aimedPause{{ID: 2, For: 400 * time.Millisecond}, {ID: 1, For: 400 * time.Millisecond}}, time.Minute)
	p.slack = 300 * time.Millisecond
	p.start()
	say := func(what string, t time.Time) {
		_ = conn.Notify("line", fmt.Sprint(what, " ", time.Since(t).Milliseconds()))
	}
	t := time.Now()
	p.at(idem.PointBeforeFn, idem.Lease{Key: "k", Token: 3})
	say("before-fn", t)
	for range 2 {
		t = time.Now()
		p.at(idem.PointAfterFn, idem.Lease{Key: "k", Token: 3})
		say("after-fn", t)
	}
}

// startPauserChild starts a pauserChild and serves it: its "line" events
// go to the returned channel, which is closed when it exited, and its
// pause calls to pause. It returns once the child is started; the returned
// wait returns once the child exited and was served.
func startPauserChild(t *testing.T, pause func(p *Proc, r PauseRequest) bool) (*Proc, <-chan string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=pauser")
	p, err := StartProc(cmd)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	served := make(chan struct{})
	go func() {
		defer close(served)
		defer close(lines)
		p.Conn.Serve(context.Background(), func(_ context.Context, method string, body any, _ bool) (any, error) {
			if r, ok := body.(PauseRequest); ok {
				return pause(p, r), nil
			}
			lines <- body.(string)
			return nil, nil
		})
	}()
	return p, lines, func() {
		t.Helper()
		if err := p.Wait(); err != nil {
			t.Fatalf("child: %v: %s", err, p.Stderr())
		}
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatal("serve did not end after the worker exited")
		}
	}
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

// TestAimedPause: a worker asks at PointAfterFn only, over the worker
// protocol; the coordinator really stops it (seen in /proc as state T) for the pause's length,
// resumes it and answers, and records the window on the key and token; a
// pause the coordinator does not know (or has done) is refused at once;
// Serve ends when the worker exits.
func TestAimedPause(t *testing.T) {
	co := &coordinator{pending: map[int]chaos.ProcessPause{1: {For: 400 * time.Millisecond}}, stopMu: make([]sync.Mutex, 1)}
	p, lines, wait := startPauserChild(t, func(p *Proc, r PauseRequest) bool { return co.stopWorker(context.Background(), 0, p, r) })
	done := make(chan struct{})
	seen := watchStopped(p.Pid(), done)

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
	wait()
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
		never := make(chan struct{})
		_, lines, wait := startPauserChild(t, func(*Proc, PauseRequest) bool { <-never; return false })
		millis(t, readLine(t, lines), "before-fn")
		for range 2 {
			if ms := millis(t, readLine(t, lines), "after-fn"); ms < 650 || ms > 5000 {
				t.Errorf("unanswered ask blocked %dms, want its 400ms plus the 300ms slack", ms)
			}
		}
		close(never)
		wait()
	})
	t.Run("cancelled", func(t *testing.T) {
		co := &coordinator{pending: map[int]chaos.ProcessPause{1: {For: time.Hour}}, stopMu: make([]sync.Mutex, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		p, lines, wait := startPauserChild(t, func(p *Proc, r PauseRequest) bool { return co.stopWorker(ctx, 0, p, r) })
		millis(t, readLine(t, lines), "before-fn")
		deadline := time.Now().Add(10 * time.Second)
		for procState(p.Pid()) != 'T' && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if procState(p.Pid()) != 'T' {
			cancel()
			t.Fatal("the worker was not stopped")
		}
		cancel()
		if ms := millis(t, readLine(t, lines), "after-fn"); ms > 5000 {
			t.Errorf("a cancelled pause of an hour still blocked %dms", ms)
		}
		millis(t, readLine(t, lines), "after-fn") // pause 2: refused, the run ended
		wait()
	})
}

// workerChild is a worker process of TestAimedPauseRun: a run worker with the
// built-in engines.
func workerChild() {
	reg, err := harness.NewRegistry(engines.Builtin()...)
	if err == nil {
		err = ServeWorker(context.Background(), Stdio(), map[string]WorkerFunc{RunKind: RunWorker(reg)})
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
	opts := Options{Command: func() (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0])
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

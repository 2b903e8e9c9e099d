package multiproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/workload"
)

// maxRestarts bounds the restarts of killed workers in one run.
const maxRestarts = 64

// coordinator starts the workers, injects the process faults and restarts
// killed workers until the traffic is over.
type coordinator struct {
	p *harness.Prepared
	n int
	// shares are the clients of each worker (clientShares); rate is the
	// run's open-loop rate (0: closed loop), split in proportion.
	shares  []int
	clients int
	rate    float64
	dir     string
	opts    Options
	base    workerSpec
	t0      time.Time
	crashes []chaos.Fault // one per incarnation that will crash, in order
	// scheduled are the pauses that stop a worker wherever it is at
	// their time; the others are aimed (pending). stopMu[i] is held
	// while worker i is stopped, so that two stops do not overlap.
	scheduled []chaos.ProcessPause
	stopMu    []sync.Mutex

	mu       sync.Mutex
	pending  map[int]chaos.ProcessPause // pauses not yet done, by id
	procs    []*exec.Cmd                // current process of each worker
	streams  []string
	windows  []history.Op
	restarts int
	nextBase int
	failed   error
	stopping bool
	grace    *time.Timer // kills the workers an interrupt did not stop in time
}

func newCoordinator(p *harness.Prepared, cfg workload.Config, hdr history.Header, n int, dir string, opts Options) *coordinator {
	sp := p.Spec
	over := sp.Overrides
	over.Duration = cfg.Duration
	over.ClosedLoop = cfg.Rate == 0 // Clients and Rate: each worker's share (next)
	co := &coordinator{p: p, n: n, dir: dir, opts: opts, procs: make([]*exec.Cmd, n),
		shares: clientShares(cfg.Clients, n), clients: cfg.Clients, rate: cfg.Rate}
	co.base = workerSpec{
		Engine: sp.Engine.Name, Backend: sp.Backend, URL: p.Env.URL, SinkURL: p.SinkURL,
		Sink: sp.Sink, Recovery: p.Recovery, Scenario: sp.ScenarioName, Over: over,
		Prefix: cfg.Keys.Prefix, Header: hdr,
	}
	if sp.Faults != nil {
		co.base.ClientTimeout = sp.Faults.ClientTimeout
	}
	faults := sp.Scenario.ChaosConfig(over.Seed, cfg.Duration).Faults
	co.crashes = chaos.ProcessCrashes(faults)
	co.pending, co.stopMu = map[int]chaos.ProcessPause{}, make([]sync.Mutex, n)
	// Two pauses in three are aimed right after an effect, so that the
	// window between effect and completion is hit on every run; the
	// third lands wherever its worker is, inside an effect's own write
	// too.
	for id, p := range chaos.ProcessPauses(over.Seed, faults, n, cfg.Duration) {
		if id%3 != 2 {
			co.pending[id] = p
		} else {
			co.scheduled = append(co.scheduled, p)
		}
	}
	return co
}

// run starts the workers, injects the process faults, restarts killed
// workers until the traffic is over, and waits for every worker. It
// returns the history streams they wrote; when ctx ends first, it returns
// the streams written so far with ctx's error.
func (co *coordinator) run(ctx context.Context, d time.Duration) ([]string, error) {
	co.t0 = time.Now()
	var wg sync.WaitGroup
	// An interrupted run stops its workers (and resumes a stopped one):
	// each saves the history it has, and is killed if it takes too long.
	stopWatch := context.AfterFunc(ctx, co.interruptAll)
	defer stopWatch()
	for i := range co.n {
		if err := co.start(ctx, &wg, i, d); err != nil {
			co.killAll()
			wg.Wait()
			return nil, err
		}
	}
	co.p.Faults.Start() // restarts and network faults, on the traffic's clock
	pctx, stopPauses := context.WithCancel(ctx)
	var pw sync.WaitGroup
	for _, p := range co.scheduled {
		pw.Go(func() { co.pause(pctx, p) })
	}
	wg.Wait() // the workers and their control pipes
	stopPauses()
	pw.Wait()
	co.p.Faults.Stop()
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.grace != nil {
		co.grace.Stop() // every worker has exited
	}
	if err := ctx.Err(); err != nil {
		// The streams written so far, for a partial history.
		return co.streams, err
	}
	if co.failed != nil {
		return nil, co.failed
	}
	return co.streams, nil
}

// next returns the spec of worker i's next incarnation, for what is left
// of the traffic.
func (co *coordinator) next(i int, d time.Duration) workerSpec {
	co.mu.Lock()
	defer co.mu.Unlock()
	ws := co.base
	ws.Index = i
	ws.Header.Process = i + 1
	ws.Over.Clients = co.shares[i]
	ws.Over.Rate = co.rate * float64(co.shares[i]) / float64(co.clients)
	ws.ClientBase = co.nextBase
	co.nextBase += ws.Over.Clients + 64 // room for the probe's clients
	ws.Over.Duration = d - time.Since(co.t0)
	if len(co.crashes) > 0 {
		f := co.crashes[0]
		co.crashes = co.crashes[1:]
		// One crash per incarnation, somewhere in what is left of its window.
		f.Count, f.Probability = 1, 0
		f.Start = max(f.Start-time.Since(co.t0), 0)
		f.End = f.End - time.Since(co.t0)
		if f.End > f.Start+10*time.Millisecond {
			ws.Crash = &f
		}
	}
	// The aimed pauses not done yet, armed from when they are due (or at
	// once) in this incarnation's traffic: every worker has them all, and
	// the first to reach an effect after one is armed takes it (a worker
	// stopped, or behind and only replaying, executes nothing).
	elapsed := time.Since(co.t0)
	for id, p := range co.pending {
		ws.Pauses = append(ws.Pauses, aimedPause{ID: id, At: max(p.At-elapsed, 0), For: p.For})
	}
	ws.Out = filepath.Join(co.dir, fmt.Sprintf("worker-%d-%d.jsonl", i, ws.ClientBase))
	return ws
}

// start starts an incarnation of worker i.
func (co *coordinator) start(ctx context.Context, wg *sync.WaitGroup, i int, d time.Duration) error {
	ws := co.next(i, d)
	spec, err := marshal(ws)
	if err != nil {
		return err
	}
	cmd, err := co.opts.command(spec)
	if err != nil {
		return harness.EnvironmentError(err)
	}
	logf, err := os.Create(ws.Out + ".log")
	if err != nil {
		return harness.EnvironmentError(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = workerProcAttr()
	var cp *controlPipe
	if len(ws.Pauses) > 0 {
		if cp, err = newControlPipe(); err != nil {
			logf.Close()
			return harness.EnvironmentError(fmt.Errorf("worker %d: control pipe: %w", i, err))
		}
		cp.attach(cmd)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		if cp != nil {
			cp.close()
		}
		return harness.EnvironmentError(fmt.Errorf("start worker %d: %w", i, err))
	}
	co.mu.Lock()
	co.procs[i] = cmd
	co.mu.Unlock()
	if cp != nil {
		// The worker holds its ends now: its exit ends serve.
		cp.closeWorkerEnds()
		wg.Go(func() { co.serve(ctx, i, cmd, cp) })
	}
	wg.Go(func() {
		err := cmd.Wait()
		logf.Close()
		co.exited(ctx, wg, i, ws, err, d)
	})
	return nil
}

// exited handles the end of an incarnation: a stream to merge, a restart
// after a SIGKILL, or a failure.
func (co *coordinator) exited(ctx context.Context, wg *sync.WaitGroup, i int, ws workerSpec, err error, d time.Duration) {
	killed := false
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		if s, ok := ee.Sys().(syscall.WaitStatus); ok && s.Signaled() && s.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	co.mu.Lock()
	if _, serr := os.Stat(ws.Out); serr == nil {
		co.streams = append(co.streams, ws.Out)
	}
	stopping := co.stopping || ctx.Err() != nil
	switch {
	case stopping:
	case killed:
		co.restarts++
	case err != nil:
		log, _ := os.ReadFile(ws.Out + ".log")
		co.failed = errors.Join(co.failed, harness.EnvironmentError(fmt.Errorf("worker %d: %v: %s", i, err, tail(string(log), 2000))))
	}
	restart := killed && !stopping && co.restarts <= maxRestarts && d-time.Since(co.t0) > 100*time.Millisecond
	co.mu.Unlock()
	if restart {
		if err := co.start(ctx, wg, i, d); err != nil {
			co.mu.Lock()
			co.failed = errors.Join(co.failed, err)
			co.mu.Unlock()
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// pause stops worker p.Worker wherever it is at p.At, for p.For, unless
// an aimed pause has it stopped then: the whole process stalls, its
// heartbeats included, as in a long GC pause.
func (co *coordinator) pause(ctx context.Context, p chaos.ProcessPause) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(co.t0.Add(p.At))):
	}
	co.mu.Lock()
	cmd := co.procs[p.Worker]
	co.mu.Unlock()
	if cmd == nil || cmd.Process == nil || !co.stopMu[p.Worker].TryLock() {
		return
	}
	defer co.stopMu[p.Worker].Unlock()
	start, ok := stopFor(ctx, cmd, p.For)
	if !ok {
		return
	}
	w := history.Fault(fmt.Sprintf("SIGSTOP worker %d (pid %d) for %s", p.Worker, cmd.Process.Pid, p.For), start, history.Now()).OnWorker(p.Worker)
	co.mu.Lock()
	co.windows = append(co.windows, w)
	co.mu.Unlock()
}

// stopFor stops cmd with SIGSTOP and continues it with SIGCONT d later,
// or as soon as ctx ends. It returns when it stopped it, on the run's
// timeline, and false when the process was gone.
func stopFor(ctx context.Context, cmd *exec.Cmd, d time.Duration) (int64, bool) {
	start := history.Now()
	if cmd.Process.Signal(syscall.SIGSTOP) != nil {
		return 0, false
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	_ = cmd.Process.Signal(syscall.SIGCONT)
	return start, true
}

// interruptGrace is how long an interrupted worker has to save its
// history before it is killed.
const interruptGrace = time.Second

// interruptAll asks every worker to stop (SIGTERM: it ends its traffic and
// saves the history it has) and kills those still running interruptGrace
// later.
func (co *coordinator) interruptAll() {
	co.mu.Lock()
	co.stopping = true
	for _, c := range co.procs {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Signal(syscall.SIGTERM)
		}
	}
	co.grace = time.AfterFunc(interruptGrace, co.killAll)
	co.mu.Unlock()
}

// killAll kills every worker (a failed start, or an interrupted worker
// that did not stop in time).
func (co *coordinator) killAll() {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.stopping = true
	for _, c := range co.procs {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Kill()
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

// maxRestarts bounds the restarts of killed workers in one run.
const maxRestarts = 64

// coordinator runs `idembench run --workers N`: N child processes (the same
// binary, hidden `worker` subcommand) drive the backend with the same keys,
// so that a key's holder and its successor are in different processes.
// The scenario's crashes become real SIGKILLs (the worker kills itself at
// the crash point after saving its history stream; the coordinator starts
// a new incarnation), its pauses SIGSTOP/SIGCONT of a whole worker process
// (heartbeat goroutines stop too). Each incarnation writes its own history
// stream; the coordinator merges them, adds the effects whose
// acknowledgement died with a worker from the backend ledger, and checks
// the whole.
type coordinator struct {
	sp      runSpec
	n       int
	exe     string
	dir     string
	base    workerSpec
	t0      time.Time
	crashes []chaos.Fault // one per incarnation that will crash, in order
	pauses  []chaos.Fault
	env     *faultEnv // backend restarts and network faults; nil if none

	mu       sync.Mutex
	procs    []*exec.Cmd // current process of each worker
	streams  []string
	windows  []history.Op
	restarts int
	nextBase int
	failed   error
	stopping bool
}

func executeWorkers(ctx context.Context, sp runSpec, n int) (*runOutcome, error) {
	if sp.Backend != backendRedis && sp.Backend != backendPostgres {
		return nil, usageErr("--workers needs --backend redis or postgres (effects must outlive a worker)")
	}
	if sp.Engine != engineIdem {
		return nil, usageErr("--workers runs the reference engine (--engine idem)")
	}
	if sp.Sink == workload.SinkTx && sp.Backend != backendPostgres {
		return nil, usageErr("--sink tx (Postgres transactional mode) needs --backend postgres")
	}
	sc := sp.Scenario
	// With backend faults the store moves to the private server or behind
	// the proxy, and the effect ledger stays on the run's own server, out
	// of the faults' reach, as the in-memory sink of a single-process run
	// is: a fault then tests the engine, not the harness's bookkeeping.
	// (The transactional sink stays with the store: that is its point.)
	var ledgerURL string
	if sp.BackendFaults.active() {
		ledgerURL = sp.RedisURL
		if sp.Backend == backendPostgres {
			ledgerURL = sp.PostgresURL
		}
	}
	env, err := openBackendFaults(ctx, &sp)
	if err != nil {
		return nil, err
	}
	defer env.close()
	// The coordinator opens the store itself first: a usage or
	// environment error is reported before any worker starts, and the
	// ledger is read through it after the run.
	st, err := openStore(ctx, sp.Backend, engineIdem, sp.RedisURL, sp.PostgresURL)
	if err != nil {
		return nil, err
	}
	defer st.close()
	ledger, closeLedger, err := openLedger(ctx, st, sp.Backend, sp.Sink, sp.RedisURL, ledgerURL)
	if err != nil {
		return nil, err
	}
	defer closeLedger()
	cfg := sc.Workload(sp.Duration)
	if sp.Clients > 0 {
		cfg.Clients = sp.Clients
	}
	if sp.Rate >= 0 {
		cfg.Rate = sp.Rate
	}
	if cfg.Clients == 0 {
		cfg.Clients = workload.DefaultClients
	}
	cfg.Keys.Prefix = "w" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.FormatUint(uint64(sp.Seed), 36)
	cfg.Store, cfg.Sink = st.store, ledger
	recovery := sp.Recovery && sp.Sink == workload.SinkFenced
	cfg.Engine.Recovery = recovery
	if cfg, err = workload.Check(cfg); err != nil {
		return nil, usageErr("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, envErr(err)
	}
	dir, err := os.MkdirTemp("", "idembench-workers-")
	if err != nil {
		return nil, envErr(err)
	}
	defer os.RemoveAll(dir)

	perWorker := max(1, cfg.Clients/n)
	hdr := history.Header{
		Format: history.Format, Version: history.FormatVersion, Clock: history.ClockName,
		Tool:     "idembench " + version,
		Scenario: sc.Name,
		Seed:     sp.Seed,
		Backend:  sp.Backend,
		Engine:   engineLabel(sp.Engine, sp.Sink, recovery),
		Start:    time.Now(),
		LeaseTTL: cfg.Engine.LeaseTTL,
		Options:  options(sp, cfg, recovery),
	}
	hdr.Options["workers"] = strconv.Itoa(n)
	rate := -1.0
	if cfg.Rate > 0 {
		rate = cfg.Rate / float64(n)
	} else if sp.Rate >= 0 || cfg.Rate == 0 {
		rate = 0
	}
	co := &coordinator{sp: sp, n: n, exe: exe, dir: dir, procs: make([]*exec.Cmd, n), env: env}
	co.base = workerSpec{
		Scenario: sp.ScenarioArg, Backend: sp.Backend, RedisURL: sp.RedisURL, PostgresURL: sp.PostgresURL,
		Sink: sp.Sink, Recovery: recovery, Seed: sp.Seed, Duration: cfg.Duration, Clients: perWorker,
		Rate: rate, Prefix: cfg.Keys.Prefix, Header: hdr, LedgerURL: ledgerURL,
	}
	if bf := sp.BackendFaults; bf != nil {
		co.base.ClientTimeout = bf.RetryTimeout
	}
	for _, f := range sc.ChaosConfig(sp.Seed, cfg.Duration).Faults {
		switch f.Kind {
		case chaos.Crash:
			for range max(f.Count, 1) {
				co.crashes = append(co.crashes, f)
			}
		case chaos.Pause:
			co.pauses = append(co.pauses, f)
		}
	}
	res, err := co.run(ctx, cfg.Duration)
	if err != nil {
		return nil, err
	}
	if err := env.err(); err != nil {
		return nil, err
	}
	h, stats, err := co.assemble(ctx, res, ledger, hdr)
	if err != nil {
		return nil, err
	}
	env.addWindows(h)
	out := &runOutcome{History: h, Warning: st.warning, Ledger: stats, Recovery: recovery, Duration: cfg.Duration, Clients: perWorker * n,
		Replay: replayCommand(sp, cfg) + " --workers " + strconv.Itoa(n)}
	return finishRun(sp, out)
}

// run starts the workers, injects the process faults, restarts killed
// workers until the traffic is over, and waits for every worker.
func (co *coordinator) run(ctx context.Context, d time.Duration) ([]string, error) {
	co.t0 = time.Now()
	var wg sync.WaitGroup
	// An interrupted run kills its workers (and resumes a stopped one).
	stopWatch := context.AfterFunc(ctx, co.killAll)
	defer stopWatch()
	for i := range co.n {
		if err := co.start(ctx, &wg, i, d); err != nil {
			co.killAll()
			wg.Wait()
			return nil, err
		}
	}
	co.env.start() // restarts and network faults, on the traffic's clock
	pctx, stopPauses := context.WithCancel(ctx)
	var pw sync.WaitGroup
	pw.Go(func() { co.pauseLoop(pctx, d) })
	wg.Wait()
	stopPauses()
	pw.Wait()
	co.env.stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.failed != nil {
		return nil, co.failed
	}
	return co.streams, nil
}

// start starts an incarnation of worker i for what is left of the traffic.
func (co *coordinator) start(ctx context.Context, wg *sync.WaitGroup, i int, d time.Duration) error {
	co.mu.Lock()
	left := d - time.Since(co.t0)
	ws := co.base
	ws.Index = i
	ws.Header.Process = i + 1
	ws.ClientBase = co.nextBase
	co.nextBase += ws.Clients + 64 // room for the probe's clients
	ws.Duration = left
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
	ws.Out = filepath.Join(co.dir, fmt.Sprintf("worker-%d-%d.jsonl", i, ws.ClientBase))
	co.mu.Unlock()
	spec, err := json.Marshal(ws)
	if err != nil {
		return err
	}
	logf, err := os.Create(ws.Out + ".log")
	if err != nil {
		return envErr(err)
	}
	cmd := exec.Command(co.exe, "worker", "--spec", string(spec))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = workerProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return envErr(fmt.Errorf("start worker %d: %w", i, err))
	}
	co.mu.Lock()
	co.procs[i] = cmd
	co.mu.Unlock()
	wg.Go(func() {
		err := cmd.Wait()
		logf.Close()
		co.exited(ctx, wg, i, cmd, ws, err, d)
	})
	return nil
}

// exited handles the end of an incarnation: a stream to merge, a restart
// after a SIGKILL, or a failure.
func (co *coordinator) exited(ctx context.Context, wg *sync.WaitGroup, i int, cmd *exec.Cmd, ws workerSpec, err error, d time.Duration) {
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
		co.failed = errors.Join(co.failed, fmt.Errorf("worker %d: %v: %s", i, err, tail(string(log), 2000)))
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

// pauseLoop stops a seeded worker with SIGSTOP at each pause of the
// scenario, for its duration, then SIGCONT: the whole process stalls, its
// heartbeats included, as in a long GC pause.
func (co *coordinator) pauseLoop(ctx context.Context, d time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(co.sp.Seed), 0x5349475354)) // "SIGST"
	type pause struct {
		at, dur time.Duration
		worker  int
	}
	var ps []pause
	for _, f := range co.pauses {
		for range max(f.Count, 1) {
			span := int64(max(f.End-f.Start, 1))
			ps = append(ps, pause{at: f.Start + time.Duration(rng.Int64N(span)), dur: f.Duration, worker: rng.IntN(co.n)})
		}
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		if p.at+p.dur > d {
			continue // a pause must end with the traffic: the probe needs every worker
		}
		wg.Go(func() { co.pause(ctx, p.at, p.dur, p.worker) })
	}
	wg.Wait()
}

// pause stops worker i at offset at for dur.
func (co *coordinator) pause(ctx context.Context, at, dur time.Duration, i int) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Until(co.t0.Add(at))):
	}
	co.mu.Lock()
	cmd := co.procs[i]
	co.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	w := history.Op{Kind: history.KindFault, Client: -1, Worker: i, Call: history.Now(),
		Label: fmt.Sprintf("SIGSTOP worker %d (pid %d) for %s", i, pid, dur)}
	if syscall.Kill(pid, syscall.SIGSTOP) != nil {
		return
	}
	t := time.NewTimer(dur)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	_ = syscall.Kill(pid, syscall.SIGCONT)
	w.Return = history.Now()
	co.mu.Lock()
	co.windows = append(co.windows, w)
	co.mu.Unlock()
}

// killAll kills every worker (an interrupted run).
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

// assemble merges the streams, adds the coordinator's fault windows and
// the effects only the backend ledger knows (their worker died before
// recording them), and resolves every effect from the ledger.
func (co *coordinator) assemble(ctx context.Context, streams []string, lr ledgerReader, hdr history.Header) (*history.History, workload.LedgerStats, error) {
	var st workload.LedgerStats
	if len(streams) == 0 {
		return nil, st, envErr(errors.New("no worker wrote a history"))
	}
	rs := make([]*os.File, len(streams))
	for i, p := range streams {
		f, err := os.Open(p)
		if err != nil {
			return nil, st, envErr(err)
		}
		defer f.Close()
		rs[i] = f
	}
	hs := make([]*history.History, len(rs))
	for i, f := range rs {
		h, err := history.Decode(f)
		if err != nil {
			return nil, st, envErr(fmt.Errorf("worker stream %s: %w", filepath.Base(streams[i]), err))
		}
		hs[i] = h
	}
	h, err := history.Merge(hs...)
	if err != nil {
		return nil, st, envErr(err)
	}
	h.Header.Start = hdr.Start
	co.mu.Lock()
	h.Ops = append(h.Ops, co.windows...)
	co.mu.Unlock()

	keys := map[string]struct{}{}
	fps := map[string]string{}
	seen := map[[2]string]struct{}{}   // effects recorded
	called := map[[2]string]struct{}{} // executions a recorded call names
	gaveUp := map[gaveUpKey]struct{}{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Key != "" {
			keys[op.Key] = struct{}{}
		}
		switch op.Kind {
		case history.KindEffect:
			seen[[2]string{op.Key, op.Exec}] = struct{}{}
		case history.KindCall:
			if op.Exec != "" && clientOf(op.Exec) == op.Client {
				// The execution's own call (a replay names it too).
				called[[2]string{op.Key, op.Exec}] = struct{}{}
			}
			if op.Outcome == history.Unknown {
				// A call the client gave up on (timeout): it stands for
				// whatever execution it started.
				gaveUp[gaveUpKey{op.Key, op.Client}] = struct{}{}
			}
			if _, ok := fps[op.Key]; !ok && op.Outcome != history.Mismatch {
				fps[op.Key] = op.FP
			}
		}
	}
	klist := make([]string, 0, len(keys))
	for k := range keys {
		klist = append(klist, k)
	}
	slices.Sort(klist)
	entries, err := lr.entries(ctx, co.base.Prefix, klist)
	if err != nil {
		return nil, st, envErr(err)
	}
	led := workload.NewLedger()
	for _, e := range entries {
		led.Record(workload.Effect{Key: e.Key, Token: 0, Exec: e.Exec}, true)
		id := [2]string{e.Key, e.Exec}
		if _, ok := seen[id]; !ok {
			// Applied by a worker that died before it recorded the effect.
			h.Ops = append(h.Ops, history.Op{Kind: history.KindEffect, Client: clientOf(e.Exec), Worker: -1, Key: e.Key,
				Token: e.Token, Exec: e.Exec, Call: e.At, Return: history.NoReturn, Applied: true,
				Err: "acknowledgement lost with its worker; found in the backend ledger"})
		}
		_, covered := gaveUp[gaveUpKey{e.Key, clientOf(e.Exec)}]
		if _, ok := called[id]; !ok && !covered {
			// Its call was in flight when its worker was killed (the
			// worker saves its history before it dies, while its other
			// clients go on for a moment): the client never got an
			// answer, and the call may have completed.
			h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Client: clientOf(e.Exec), Worker: -1, Key: e.Key,
				Attempt: 1, FP: fps[e.Key], Exec: e.Exec, Call: e.At - 1, Return: history.NoReturn, Outcome: history.Unknown,
				Err: "call in flight when its worker was killed"})
		}
	}
	history.SortByCall(h.Ops)
	// The backend ledger is the whole truth: an effect it lacks was not
	// applied (rejected, or rolled back with its transaction).
	h.ResolveEffects(func(op *history.Op) (bool, bool) {
		applied, _ := led.Lookup(op.Key, op.Exec)
		return applied, true
	})
	return h, led.Stats(), nil
}

type gaveUpKey struct {
	key    string
	client int
}

// clientOf parses the client id out of an execution id "<client>.<seq>".
func clientOf(exec string) int {
	s, _, _ := strings.Cut(strings.TrimPrefix(exec, "p"), ".")
	n, _ := strconv.Atoi(s)
	return n
}

// finishRun checks a run's history (one process or merged from workers),
// measures it and writes its run directory when sp.Out is set.
func finishRun(sp runSpec, out *runOutcome) (*runOutcome, error) {
	h := out.History
	copts := checker.Options{Timeout: sp.CheckTimeout}
	if sp.Out != "" {
		copts.VisualizeDir = filepath.Join(sp.Out, "violations")
	}
	out.Report = checker.Check(h, copts)
	ropts := reports.Options{ReplayCommand: out.Replay}
	if !sp.Thresholds.IsZero() {
		ropts.Thresholds = &sp.Thresholds
	}
	if sp.Out == "" {
		out.Summary = reports.NewSummary(reports.Measure(h, ropts.MeasureOptions), &out.Report, ropts)
		return out, nil
	}
	if err := writeHistory(sp.Out, h); err != nil {
		return out, usageErr("--out: %v", err)
	}
	var err error
	if out.Summary, err = reports.WriteRunReport(sp.Out, h, out.Report, ropts); err != nil {
		return out, usageErr("--out: %v", err)
	}
	out.Dir = sp.Out
	return out, nil
}

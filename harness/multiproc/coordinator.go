package multiproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
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
	opts    Options
	base    workerSpec
	t0      time.Time
	crashes []chaos.Fault // one per incarnation that will crash, in order
	// scheduled are the pauses that stop a worker wherever it is at
	// their time; the others are aimed (pending). stopMu[i] is held
	// while worker i is stopped, so that two stops do not overlap.
	scheduled []chaos.ProcessPause
	stopMu    []sync.Mutex

	mu      sync.Mutex
	pending map[int]chaos.ProcessPause // pauses not yet done, by id
	procs   []*Proc                    // current process of each worker
	// ops are what the workers sent of their histories; ended counts the
	// incarnations that sent all of it (MethodDone or MethodCrash);
	// progress is each incarnation's last count of calls, by ClientBase.
	ops      []history.Op
	ended    int
	progress map[int]int
	windows  []history.Op
	clocks   []history.ClockBound // one per incarnation that measured its clock
	// latency merges the HDR histograms the incarnations sent
	// (MethodLatency), latencies counts them, latencyErr is the first
	// that did not decode.
	latency    reports.Latency
	latencies  int
	latencyErr error
	// The start barrier: gate is closed once every worker is ready (its
	// store open and its clock measured), or one failed to start, and
	// the workers' traffic and the faults start then.
	ready    []bool
	nready   int
	gate     chan struct{}
	gateOnce sync.Once
	restarts int
	nextBase int
	failed   error
	stopping bool
	grace    *time.Timer // kills the workers an interrupt did not stop in time
	join     *joiner     // workers that join over NATS; nil: local processes
	// joinFaults are each joined worker's crashes and pauses, injected
	// in its engine (joinfaults.go).
	joinFaults [][]chaos.Fault
	// sentLedger merges the ledgers memory-backed workers send
	// (memledger.go).
	sentLedger sentLedger
}

func newCoordinator(p *harness.Prepared, cfg workload.Config, n int, opts Options) *coordinator {
	sp := p.Spec
	over := sp.Overrides
	over.Duration = cfg.Duration
	over.ClosedLoop = cfg.Rate == 0 // Clients and Rate: each worker's share (next)
	co := &coordinator{p: p, n: n, opts: opts, procs: make([]*Proc, n), progress: map[int]int{},
		ready: make([]bool, n), gate: make(chan struct{}),
		shares: clientShares(cfg.Clients, n), clients: cfg.Clients, rate: cfg.Rate}
	co.base = workerSpec{
		Engine: sp.Engine.Name, Backend: sp.Backend, URL: p.Env.URL, SinkURL: p.SinkURL,
		Sink: sp.Sink, Recovery: p.Recovery, Scenario: sp.ScenarioName, Over: over,
		Prefix: cfg.Keys.Prefix,
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
// workers until the traffic is over, and waits for every worker and the
// histories they send. When ctx ends first, it returns ctx's error and
// keeps what the workers sent.
func (co *coordinator) run(ctx context.Context, d time.Duration) error {
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
			return err
		}
	}
	// The start barrier: a worker slow to open its store (a loaded
	// machine, a far host) is not struck by a fault meant for its
	// traffic, and the traffic's clock starts when every worker can send.
	select {
	case <-co.gate:
	case <-ctx.Done():
	}
	co.mu.Lock()
	co.t0 = time.Now()
	co.mu.Unlock()
	co.p.Faults.Start() // restarts and network faults, on the traffic's clock
	pctx, stopPauses := context.WithCancel(ctx)
	var pw sync.WaitGroup
	for _, p := range co.scheduled {
		pw.Go(func() { co.pause(pctx, p) })
	}
	wg.Wait() // the workers and their connections
	stopPauses()
	pw.Wait()
	co.p.Faults.Stop()
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.grace != nil {
		co.grace.Stop() // every worker has exited
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return co.failed
}

// next returns the spec of worker i's next incarnation, for what is left
// of the traffic.
func (co *coordinator) next(i int, d time.Duration) workerSpec {
	co.mu.Lock()
	defer co.mu.Unlock()
	ws := co.base
	ws.Index = i
	if co.join != nil && !co.join.j.SpanKeys {
		ws.Prefix = co.base.Prefix + "-h" + strconv.Itoa(i) // keys sharded by host
	}
	if co.opts.ClockSkew != nil {
		ws.ClockSkew = co.opts.ClockSkew(i)
	}
	if i < len(co.joinFaults) {
		ws.Faults = co.joinFaults[i]
	}
	ws.Over.Clients = co.shares[i]
	ws.Over.Rate = co.rate * float64(co.shares[i]) / float64(co.clients)
	ws.ClientBase = co.nextBase
	co.nextBase += ws.Over.Clients + probeClients
	// Until the start barrier the traffic has not begun: a worker that
	// joins late (a slow host, a busy machine) still runs all of it.
	elapsed := time.Duration(0)
	select {
	case <-co.gate:
		elapsed = time.Since(co.t0)
	default:
	}
	ws.Over.Duration = d - elapsed
	if len(co.crashes) > 0 {
		f := co.crashes[0]
		co.crashes = co.crashes[1:]
		// One crash per incarnation, somewhere in what is left of its window.
		f.Count, f.Probability = 1, 0
		f.Start = max(f.Start-elapsed, 0)
		f.End = f.End - elapsed
		if f.End > f.Start+10*time.Millisecond {
			ws.Crash = &f
		}
	}
	// The aimed pauses not done yet, armed from when they are due (or at
	// once) in this incarnation's traffic: every worker has them all, and
	// the first to reach an effect after one is armed takes it (a worker
	// stopped, or behind and only replaying, executes nothing).
	for id, p := range co.pending {
		ws.Pauses = append(ws.Pauses, aimedPause{ID: id, At: max(p.At-elapsed, 0), For: p.For})
	}
	return ws
}

// start starts an incarnation of worker i.
func (co *coordinator) start(ctx context.Context, wg *sync.WaitGroup, i int, d time.Duration) error {
	ws := co.next(i, d)
	var p *Proc
	if co.join != nil {
		var err error
		if p, err = co.join.accept(ctx, i); err != nil {
			return harness.EnvironmentError(err)
		}
	} else {
		cmd, err := co.opts.command()
		if err != nil {
			return harness.EnvironmentError(err)
		}
		if p, err = StartProc(cmd); err != nil {
			return harness.EnvironmentError(fmt.Errorf("start worker %d: %w", i, err))
		}
	}
	co.mu.Lock()
	co.procs[i] = p
	co.mu.Unlock()
	_ = p.Conn.SendHello(workerKind, ws)
	wg.Go(func() {
		// Serve ends once the worker exited and all it sent is read.
		p.Conn.Serve(ctx, func(ctx context.Context, method string, body any, _ bool) (any, error) {
			return co.handle(ctx, i, &ws, p, method, body)
		})
		p.Conn.Close()
		co.exited(ctx, wg, i, p, d)
	})
	return nil
}

// handle carries out a call or an event of worker i's incarnation p.
func (co *coordinator) handle(ctx context.Context, i int, ws *workerSpec, p *Proc, method string, body any) (any, error) {
	switch r := body.(type) {
	case PauseRequest: // MethodPause
		return co.stopWorker(ctx, i, p, r), nil
	case ClockSample: // MethodClock, a call: answered at once
		return ClockSample{Now: history.Now()}, nil
	case StartRequest: // MethodStart: answered at the start barrier
		select {
		case <-co.gate:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	incarnation := ws.ClientBase
	co.mu.Lock()
	defer co.mu.Unlock()
	switch b := body.(type) {
	case ClockReport: // MethodClock, the event: the worker is ready
		co.noteClock(i, ws, b)
		if !co.ready[i] {
			co.ready[i] = true
			if co.nready++; co.nready == co.n {
				co.openGate()
			}
		}
	case []history.Op: // MethodRecord
		co.ops = append(co.ops, b...)
	case []workload.Applied: // MethodLedger, from a memory-backed worker
		co.sentLedger.add(b)
	case reports.LatencyWire: // MethodLatency
		if err := co.latency.AddWire(b); err != nil && co.latencyErr == nil {
			co.latencyErr = fmt.Errorf("worker %d: %w", i, err)
		}
		co.latencies++
	case int: // MethodProgress
		co.progress[incarnation] = b
	case string: // MethodDone, MethodCrash
		co.ended++
	default:
		return nil, fmt.Errorf("multiproc: worker %d sent %q with a %T", i, method, body)
	}
	return nil, nil
}

// calls sums the calls every worker incarnation recorded so far.
func (co *coordinator) calls() int {
	co.mu.Lock()
	defer co.mu.Unlock()
	n := 0
	for _, c := range co.progress {
		n += c
	}
	return n
}

// sent reports whether any worker sent any of its history.
func (co *coordinator) sent() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	return len(co.ops) > 0 || co.ended > 0
}

// exited handles the end of an incarnation: a restart after a SIGKILL, or
// a failure.
func (co *coordinator) exited(ctx context.Context, wg *sync.WaitGroup, i int, p *Proc, d time.Duration) {
	err := p.Wait()
	killed := p.Killed()
	co.mu.Lock()
	stopping := co.stopping || ctx.Err() != nil
	switch {
	case stopping:
	case killed && co.join != nil:
		// A worker elsewhere that stopped answering: nothing here can
		// start it again, and no fault plan kills joined workers.
		co.failed = errors.Join(co.failed, harness.EnvironmentError(fmt.Errorf("worker %d: %w", i, errWorkerLost)))
		co.openGate()
		killed = false
	case killed:
		co.restarts++
	case err != nil:
		co.failed = errors.Join(co.failed, harness.EnvironmentError(fmt.Errorf("worker %d: %w", i, p.ExitError())))
		co.openGate() // the run ends: nobody waits for this worker
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

// stopWorker carries out a pause request of worker i: SIGSTOP, the pause's
// length (less if ctx ends), SIGCONT, and the window in the history; a
// scheduled stop of the same worker under way ends first. It refuses a
// pause it does not know or that a worker already took, and any pause once
// the run is stopping.
func (co *coordinator) stopWorker(ctx context.Context, i int, p *Proc, r PauseRequest) bool {
	co.mu.Lock()
	pz, ok := co.pending[r.ID]
	ok = ok && !co.stopping && ctx.Err() == nil
	if ok {
		delete(co.pending, r.ID)
	}
	co.mu.Unlock()
	if !ok {
		return false
	}
	co.stopMu[i].Lock() // a scheduled stop of the worker ends first
	start, stopped := p.StopFor(ctx, pz.For)
	co.stopMu[i].Unlock()
	if !stopped {
		return false // it exited meanwhile
	}
	w := history.Fault(history.FaultPause, fmt.Sprintf("SIGSTOP worker %d (pid %d) for %s, aimed after the effect of %s", i, p.Pid(), pz.For, r.Key),
		start, history.Now()).OnWorker(i).OnKey(r.Key, r.Token)
	co.mu.Lock()
	co.windows = append(co.windows, w)
	co.mu.Unlock()
	return true
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
	proc := co.procs[p.Worker]
	co.mu.Unlock()
	if proc == nil || !co.stopMu[p.Worker].TryLock() {
		return
	}
	defer co.stopMu[p.Worker].Unlock()
	start, ok := proc.StopFor(ctx, p.For)
	if !ok {
		return
	}
	w := history.Fault(history.FaultPause, fmt.Sprintf("SIGSTOP worker %d (pid %d) for %s", p.Worker, proc.Pid(), p.For), start, history.Now()).OnWorker(p.Worker)
	co.mu.Lock()
	co.windows = append(co.windows, w)
	co.mu.Unlock()
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
	for _, p := range co.procs {
		if p != nil {
			_ = p.Signal(syscall.SIGCONT)
			_ = p.Signal(syscall.SIGTERM)
		}
	}
	co.grace = time.AfterFunc(interruptGrace, co.killAll)
	co.mu.Unlock()
}

// killAll kills every worker (a failed start, or an interrupted worker
// that did not stop in time).
// openGate opens the start barrier.
func (co *coordinator) openGate() { co.gateOnce.Do(func() { close(co.gate) }) }

func (co *coordinator) killAll() {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.stopping = true
	for _, p := range co.procs {
		if p != nil {
			_ = p.Signal(syscall.SIGCONT)
			_ = p.Signal(syscall.SIGKILL)
		}
	}
}

// mergedLatency returns the latency merged from the histograms every
// incarnation sent, or nil when none sent one.
func (co *coordinator) mergedLatency() (*reports.Latency, error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.latencyErr != nil {
		return nil, harness.EnvironmentError(co.latencyErr)
	}
	if co.latencies == 0 {
		return nil, nil
	}
	l := co.latency
	return &l, nil
}

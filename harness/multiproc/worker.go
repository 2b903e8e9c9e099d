package multiproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// RunKind names a worker of Run in the protocol's hello.
const RunKind = "run"

// workerKind is RunKind, as the coordinator sends it.
const workerKind = RunKind

// A WorkerFunc runs one worker process of the kind it serves, on the
// connection to its coordinator, given the hello the coordinator sent.
type WorkerFunc func(ctx context.Context, c *Conn, h Hello) error

// ServeWorker is the entry point of every worker process (the hidden
// `idembench worker` command): it speaks the worker protocol over t
// (Stdio: its stdin and stdout), reads the coordinator's hello and runs
// the WorkerFunc of its kind: RunKind for `run --workers`, consume's
// WorkerKind for `consume --processes`. A kind not in kinds is a
// configuration error naming the ones served.
func ServeWorker(ctx context.Context, t io.ReadWriteCloser, kinds map[string]WorkerFunc) error {
	conn := NewConn(t)
	defer conn.Close()
	h, err := conn.ReadAnyHello()
	if err != nil {
		return harness.ConfigError("worker: %w", err)
	}
	f, ok := kinds[h.Kind]
	if !ok {
		return harness.ConfigError("worker: no worker of kind %q here (this binary serves %s)", h.Kind, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	return f(ctx, conn, h)
}

// RunWorker returns the worker of a Run: the engine its spec names is
// looked up in engines. It sends the history it recorded when its run is
// over (or interrupted: SIGTERM cancels ctx), and also right before it
// kills itself at a crash point. Errors wrap harness.ErrConfig or
// harness.ErrEnvironment.
func RunWorker(engines *harness.Registry) WorkerFunc {
	return func(ctx context.Context, conn *Conn, h Hello) error {
		return runWorker(ctx, conn, h, engines)
	}
}

func runWorker(ctx context.Context, conn *Conn, h Hello, engines *harness.Registry) error {
	var ws workerSpec
	if err := h.Decode(&ws); err != nil {
		return harness.ConfigError("worker: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// The answers to calls, and a remote worker's stop (a local one gets
	// SIGTERM, which cancels ctx).
	go conn.Serve(ctx, func(_ context.Context, method string, _ any, event bool) (any, error) {
		if event && method == MethodStop {
			stop()
			return nil, nil
		}
		return nil, fmt.Errorf("multiproc: a worker serves no %q calls", method)
	})
	e, err := engines.Lookup(ws.Engine)
	if err != nil {
		return err
	}
	sc, err := scenarios.Load(ws.Scenario)
	if err != nil {
		return harness.ConfigError("worker: %w", err)
	}
	env := harness.Env{Backend: ws.Backend, URL: ws.URL, Prefix: ws.Prefix, Warn: func(string) {}}
	st, c, err := e.Open(ctx, env)
	if err != nil {
		return harness.EnvironmentError(err)
	}
	defer closeQuietly(c)
	// A memory-backed worker (a joined run, keys sharded by host) owns its
	// store and its ledger, and sends the ledger with its history.
	var sink workload.Sink
	var mem *memSink
	if ws.Backend == harness.Memory {
		if mem, err = newMemSink(ws.Sink); err != nil {
			return err
		}
		sink = mem
	} else {
		s, closeSink, err := openSink(ctx, e, ws.Sink, env, ws.SinkURL)
		if err != nil {
			return err
		}
		defer closeSink()
		sink = s
	}
	cfg := harness.WorkloadConfig(sc, ws.Over)
	if ws.ClientTimeout > 0 {
		cfg.Retry.Timeout = ws.ClientTimeout
	}
	cfg.Store, cfg.Sink = st, sink
	cfg.Engine.Recovery = ws.Recovery
	cfg.ClientBase = ws.ClientBase
	cfg.Keys.Prefix = ws.Prefix
	cfg.Recorder = history.NewRecorder()
	// The worker's clock, corrected by its measured offset to the
	// coordinator's: on one machine the offset is about zero and the
	// bound a few microseconds; a host with its own clock (ClockSkew
	// simulates one) is brought onto the coordinator's timeline, to
	// within the bound the checker widens its ops by.
	skew := int64(ws.ClockSkew)
	local := func() int64 { return history.Now() + skew }
	clk, err := measureClock(ctx, conn, local)
	if err != nil {
		return harness.EnvironmentError(fmt.Errorf("worker %d: %w", ws.Index, err))
	}
	if err := conn.Notify(MethodClock, clk); err != nil {
		return harness.EnvironmentError(fmt.Errorf("worker %d: report the clock: %w", ws.Index, err))
	}
	offset := int64(clk.Offset)
	now := func() int64 { return local() + offset }
	if mem != nil {
		mem.now = now
	}
	// sent is what the worker sends of its ledger: a memory-backed
	// worker's, which nobody can read after it exits.
	sent := func() []workload.Applied {
		if mem == nil {
			return nil
		}
		return mem.entries()
	}
	// The start barrier: every worker's store is open and its clock
	// measured before any traffic.
	if _, err := conn.Call(ctx, MethodStart, StartRequest{}); err != nil {
		if ctx.Err() != nil { // interrupted before the traffic
			return sendHistory(conn, cfg.Recorder, nil, sent(), MethodDone)
		}
		return harness.EnvironmentError(fmt.Errorf("worker %d: wait for the start: %w", ws.Index, err))
	}
	cfg.Now = now
	var faults []chaos.Fault
	if ws.Crash != nil {
		faults = append(faults, *ws.Crash)
	}
	faults = append(faults, ws.Faults...) // a joined worker's crashes and pauses
	inj, err := chaos.New(chaos.Config{Seed: ws.Over.Seed + int64(ws.ClientBase), Faults: faults, RunFor: cfg.Duration, Now: now})
	if err != nil {
		return harness.ConfigError("worker: %w", err)
	}
	cfg.Faults = &workerFaults{Injector: inj, ws: &ws, rec: cfg.Recorder, c: conn, now: now, pauser: newPauser(ctx, conn, ws.Pauses, cfg.Duration)}
	stopReports := reportCalls(conn, cfg.Recorder)
	_, err = workload.Run(ctx, cfg)
	stopReports()
	if err != nil && ctx.Err() == nil {
		return err
	}
	// Interrupted (the coordinator's SIGTERM): the history so far is
	// still worth keeping.
	// The windows of the crashes and pauses a joined worker injected in
	// its engine (a local worker's crash sends its own before the kill).
	var windows []history.Op
	if len(ws.Faults) > 0 {
		for _, w := range inj.Windows() {
			windows = append(windows, w.OnWorker(ws.Index))
		}
	}
	if serr := sendHistory(conn, cfg.Recorder, windows, sent(), MethodDone); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// workerFaults turns the injector's crash into a real one (the worker
// saves what it recorded and sends itself SIGKILL) and asks for the
// worker's aimed pauses.
type workerFaults struct {
	*chaos.Injector
	ws     *workerSpec
	rec    *history.Recorder
	c      *Conn
	now    func() int64 // the worker's corrected clock
	pauser *pauser      // nil without pauses
}

func (f *workerFaults) Start() {
	f.Injector.Start()
	if f.pauser != nil {
		f.pauser.start()
	}
}

func (f *workerFaults) Stop() {
	if f.pauser != nil {
		f.pauser.stop()
	}
	f.Injector.Stop()
}

func (f *workerFaults) Hook() idem.Hook {
	h := f.Injector.Hook()
	if h == nil && f.pauser == nil {
		return nil
	}
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		var err error
		if h != nil {
			err = h(ctx, p, l)
		}
		if err == nil && f.pauser != nil {
			f.pauser.at(p, l)
		}
		if chaos.IsCrash(err) && len(f.ws.Faults) == 0 { // a joined worker's crash stays in its engine
			now := f.now()
			w := history.Fault(history.FaultCrash, fmt.Sprintf("SIGKILL worker %d at %s", f.ws.Index, p), now, now).OnWorker(f.ws.Index).OnKey(l.Key, uint64(l.Token))
			_ = sendHistory(f.c, f.rec, []history.Op{w}, nil, MethodCrash)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		return err
	}
}

// historyChunk bounds the ops of one record event.
const historyChunk = 4096

// sendHistory sends the ops rec recorded (plus extra) to the coordinator
// in record events, then the applied effects of a memory-backed worker's
// ledger (ledger) in ledger events, the HDR histogram of its calls'
// latencies, and the event end (MethodDone or MethodCrash). When it
// returns nil, all of it is in the transport.
func sendHistory(c *Conn, rec *history.Recorder, extra []history.Op, ledger []workload.Applied, end string) error {
	ops := append(rec.Ops(), extra...)
	lat, err := reports.CallsLatency(ops).Wire()
	if err != nil {
		return harness.EnvironmentError(fmt.Errorf("worker: %w", err))
	}
	for len(ops) > 0 {
		n := min(len(ops), historyChunk)
		if err := c.Notify(MethodRecord, ops[:n]); err != nil {
			return harness.EnvironmentError(fmt.Errorf("worker: send history: %w", err))
		}
		ops = ops[n:]
	}
	for len(ledger) > 0 {
		n := min(len(ledger), historyChunk)
		if err := c.Notify(MethodLedger, ledger[:n]); err != nil {
			return harness.EnvironmentError(fmt.Errorf("worker: send the ledger: %w", err))
		}
		ledger = ledger[n:]
	}
	if err := c.Notify(MethodLatency, lat); err != nil {
		return harness.EnvironmentError(fmt.Errorf("worker: send the latency histogram: %w", err))
	}
	if err := c.Notify(end, ""); err != nil {
		return harness.EnvironmentError(fmt.Errorf("worker: send history: %w", err))
	}
	return nil
}

package sim

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// Result is what one simulation produced.
type Result struct {
	// Config is the configuration that ran.
	Config Config
	// History is the recorded history, sorted; HistoryJSONL its encoding
	// (history.jsonl), byte-identical for one seed and one store.
	History      *history.History
	HistoryJSONL []byte
	// Report is the checker's report, the timing invariants included.
	Report checker.Report
	// Virtual is the simulated time from the first request to the end of
	// the probes; Wall the real time the simulation took.
	Virtual, Wall time.Duration
	// Calls, Effects and Faults count the recorded ops; Steps the actions
	// the scheduler ordered.
	Calls, Effects, Faults int
	Steps                  int64
}

// world is the state of one simulation.
type world struct {
	cfg    Config
	sch    *scheduler
	start  time.Time
	sink   *sink
	apps   []*app
	faults atomic.Int64
	// inflight runs every call: a call a client gave up on goes on after
	// the client moved on.
	inflight *pool

	mu     sync.Mutex
	chunks [][]history.Op // filled in chunks, so recording never copies the history
}

const chunkOps = 4096

// app is one simulated app server: its clock, its store and its engine.
type app struct {
	id         int
	noRecovery bool // no recovery hook: uncertain outcomes are recorded
	clock      skewClock
	store      *gatedStore
	eng        *idem.Engine
}

func (w *world) now() int64 { return int64(time.Since(w.start)) }

func (w *world) record(op history.Op) {
	w.mu.Lock()
	if n := len(w.chunks); n == 0 || len(w.chunks[n-1]) == chunkOps {
		w.chunks = append(w.chunks, make([]history.Op, 0, chunkOps))
	}
	last := &w.chunks[len(w.chunks)-1]
	*last = append(*last, op)
	w.mu.Unlock()
}

// Run runs one simulation of cfg against the stores open opens, in a
// testing/synctest bubble of t, checks its history and returns the
// result. It fails t only when the simulation cannot run (an invalid
// Config, a store that does not open); a violation is in the Report.
func Run(t *testing.T, open Opener, cfg Config) Result {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	var res Result
	wall := time.Now()
	synctest.Test(t, func(t *testing.T) {
		res = simulate(t, open, cfg)
	})
	// The check runs outside the bubble, on the real clock and its budget.
	res.Report = checker.Check(res.History, checker.Options{})
	checker.CheckTiming(&res.Report, res.History, checker.Timing{LeaseTTL: cfg.LeaseTTL, Slack: cfg.LivenessSlack, ClockSlack: cfg.ClockSlack})
	res.Wall = time.Since(wall)
	return res
}

func simulate(t *testing.T, open Opener, cfg Config) Result {
	w := &world{cfg: cfg, sch: newScheduler(uint64(cfg.Seed)), start: time.Now(), sink: newSink(), inflight: newPool()}
	go w.sch.run()
	defer w.sch.stop()
	rng := newRand(cfg.Seed, -1)
	var closers []io.Closer
	for i := range cfg.AppServers {
		a := &app{id: i}
		if cfg.Faults.ClockSkew > 0 {
			a.clock.offset = time.Duration(rng.Int64N(int64(2*cfg.Faults.ClockSkew)+1)) - cfg.Faults.ClockSkew
		}
		st, err := open(i, a.clock)
		if err != nil {
			t.Fatalf("sim: open the store of app server %d: %v", i, err)
		}
		if f, ok := closeAfter.LoadAndDelete(st); ok {
			closers = append(closers, closeFunc(f.(func())))
		} else if c, ok := st.(io.Closer); ok && !slices.ContainsFunc(closers, func(x io.Closer) bool { return x == c }) {
			closers = append(closers, c)
		}
		a.store = &gatedStore{w: w, inner: st}
		opts := []idem.Option{
			idem.WithLeaseTTL(cfg.LeaseTTL), idem.WithRetention(cfg.Retention), idem.WithHeartbeat(cfg.Heartbeat),
			idem.WithClock(a.clock), idem.WithHook(w.hook), idem.WithObserver(w.observe), idem.WithoutDurations(),
		}
		if _, us := st.(idem.UncertainStore); us && i >= cfg.AppServers-cfg.NoRecovery {
			// No recovery hook: an ambiguous outcome, and a take-over, are
			// recorded uncertain for an operator.
			a.noRecovery = true
			opts = append(opts, idem.WithTakeOverUncertain())
		} else {
			opts = append(opts, idem.WithRecovery(w.recovery))
		}
		a.eng = idem.New(a.store, opts...)
		w.apps = append(w.apps, a)
		if a.clock.offset != 0 {
			op := history.Fault(faultClockSkew, fmt.Sprintf("app server %d clock %+v", i, a.clock.offset), 0, history.NoReturn)
			op.Worker = i
			w.record(op)
		}
	}

	ctx, stopBackground := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	w.startBackground(ctx, &bg)

	var clients sync.WaitGroup
	cls := make([]*client, cfg.Clients)
	for i := range cls {
		cls[i] = w.newClient(i)
		clients.Go(cls[i].loop)
	}
	clients.Wait()
	w.inflight.Wait()
	w.inflight.close()

	// The faults are over: wait out a lease and its slack, then probe
	// every key a client left without an answer.
	time.Sleep(cfg.LeaseTTL + cfg.LivenessSlack)
	for _, c := range cls {
		clients.Go(c.probe)
	}
	clients.Wait()
	virtual := time.Since(w.start)
	stopBackground()
	bg.Wait()
	for _, a := range w.apps {
		a.eng.Close()
	}
	for _, c := range closers {
		c.Close()
	}
	return w.result(cfg, virtual)
}

// startBackground starts the completer (one, on app server 0, as a
// deployment runs one completer job; on stores with idem.Lister) and the
// sweeper (on stores with idem.Sweeper).
func (w *world) startBackground(ctx context.Context, bg *sync.WaitGroup) {
	cfg := &w.cfg
	if a := w.apps[0]; cfg.CompleterEvery > 0 {
		if _, ok := a.store.inner.(idem.Lister); ok {
			act := &actor{id: cfg.Clients, client: cfg.Clients, worker: a.id}
			cctx := context.WithValue(ctx, actorKey{}, act)
			bg.Go(func() { _ = a.eng.RunCompleter(cctx, cfg.CompleterEvery, cfg.LeaseTTL) })
		}
	}
	if _, ok := w.apps[0].store.inner.(idem.Sweeper); ok && cfg.GCEvery > 0 {
		act := &actor{id: cfg.Clients + cfg.AppServers, client: -1, worker: -1}
		gctx := context.WithValue(ctx, actorKey{}, act)
		bg.Go(func() {
			t := time.NewTicker(cfg.GCEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					_, _ = w.apps[0].store.Sweep(gctx)
				}
			}
		})
	}
}

// result sorts the history and encodes it.
func (w *world) result(cfg Config, virtual time.Duration) Result {
	ops := make([]history.Op, 0, len(w.chunks)*chunkOps)
	for _, c := range w.chunks {
		ops = append(ops, c...)
	}
	w.chunks = nil
	sorted := sortOps(ops)
	h := &history.History{Header: history.Header{
		Tool: "idembench sim", Scenario: "sim/" + cfg.Name, Seed: cfg.Seed, Engine: "fenced+recovery",
		Start: w.start.UTC(), LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention, Clock: "virtual",
		Options: map[string]string{
			"clients": fmt.Sprint(cfg.Clients), "app_servers": fmt.Sprint(cfg.AppServers),
			"duration": cfg.Duration.String(), "takeover_grace": cfg.TakeoverGrace.String(),
		},
	}, Ops: sorted}
	res := Result{Config: cfg, History: h, Virtual: virtual, Steps: w.sch.steps}
	if !cfg.NoJSONL {
		var buf bytes.Buffer
		if err := history.Encode(&buf, h); err != nil {
			panic(fmt.Sprintf("sim: encode the history: %v", err))
		}
		res.HistoryJSONL = buf.Bytes()
	}
	res.Calls, res.Effects, _ = h.Counts()
	res.Faults = int(w.faults.Load())
	return res
}

// sortOps sorts ops by Call, and ops of one instant by their encoding: the
// renewals of one heartbeat tick race and are recorded in any order, so
// only this makes the history a function of the seed.
func sortOps(ops []history.Op) []history.Op {
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	var ea, eb []byte
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && ops[j].Call == ops[i].Call {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(ops[i:j], func(a, b history.Op) int {
				ea, eb = history.AppendOp(ea[:0], &a), history.AppendOp(eb[:0], &b)
				return bytes.Compare(ea, eb)
			})
		}
		i = j
	}
	return ops
}

// closeFunc is a close function of SharedWithClose as an io.Closer.
type closeFunc func()

func (f closeFunc) Close() error { f(); return nil }

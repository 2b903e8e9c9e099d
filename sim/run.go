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

	mu  sync.Mutex
	ops []history.Op
}

// app is one simulated app server: its clock, its store and its engine.
type app struct {
	id    int
	clock skewClock
	store *gatedStore
	eng   *idem.Engine
}

func (w *world) now() int64 { return int64(time.Since(w.start)) }

func (w *world) record(op history.Op) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
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
	checker.CheckTiming(&res.Report, res.History, checker.Timing{LeaseTTL: cfg.LeaseTTL, Slack: cfg.LivenessSlack})
	res.Wall = time.Since(wall)
	return res
}

func simulate(t *testing.T, open Opener, cfg Config) Result {
	w := &world{cfg: cfg, sch: newScheduler(uint64(cfg.Seed)), start: time.Now(), sink: newSink()}
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
		if c, ok := st.(io.Closer); ok && !slices.Contains(closers, c) {
			closers = append(closers, c)
		}
		a.store = &gatedStore{w: w, inner: st}
		a.eng = idem.New(a.store,
			idem.WithLeaseTTL(cfg.LeaseTTL), idem.WithRetention(cfg.Retention), idem.WithHeartbeat(cfg.Heartbeat),
			idem.WithClock(a.clock), idem.WithHook(w.hook), idem.WithObserver(w.observe), idem.WithoutDurations(),
			idem.WithRecovery(w.recovery))
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

// startBackground starts the completers (one per app server, on stores
// with idem.Lister) and the sweeper (on stores with idem.Sweeper).
func (w *world) startBackground(ctx context.Context, bg *sync.WaitGroup) {
	cfg := &w.cfg
	if cfg.CompleterEvery > 0 {
		for _, a := range w.apps {
			if _, ok := a.store.inner.(idem.Lister); !ok {
				break
			}
			act := &actor{id: cfg.Clients + a.id, client: cfg.Clients + a.id, worker: a.id}
			cctx := context.WithValue(ctx, actorKey{}, act)
			bg.Go(func() {
				// Stagger the app servers' completers over one interval.
				time.Sleep(cfg.CompleterEvery * time.Duration(a.id) / time.Duration(len(w.apps)))
				_ = a.eng.RunCompleter(cctx, cfg.CompleterEvery, cfg.LeaseTTL)
			})
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

// result sorts and encodes the history and checks it.
func (w *world) result(cfg Config, virtual time.Duration) Result {
	ops := w.ops
	// Ops that one instant recorded from racing renewals arrive in any
	// order: sort by time, then by their encoding, so the history is a
	// function of the seed.
	enc := make([][]byte, len(ops))
	idx := make([]int, len(ops))
	for i := range ops {
		enc[i] = history.AppendOp(nil, &ops[i])
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(ops[a].Call, ops[b].Call); c != 0 {
			return c
		}
		return bytes.Compare(enc[a], enc[b])
	})
	sorted := make([]history.Op, len(ops))
	for i, j := range idx {
		sorted[i] = ops[j]
	}
	h := &history.History{Header: history.Header{
		Tool: "idembench sim", Scenario: "sim/" + cfg.Name, Seed: cfg.Seed, Engine: "fenced+recovery",
		Start: w.start.UTC(), LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention, Clock: "virtual",
		Options: map[string]string{
			"clients": fmt.Sprint(cfg.Clients), "app_servers": fmt.Sprint(cfg.AppServers),
			"duration": cfg.Duration.String(), "takeover_grace": cfg.TakeoverGrace.String(),
		},
	}, Ops: sorted}
	var buf bytes.Buffer
	if err := history.Encode(&buf, h); err != nil {
		panic(fmt.Sprintf("sim: encode the history: %v", err))
	}
	res := Result{Config: cfg, History: h, HistoryJSONL: buf.Bytes(), Virtual: virtual, Steps: w.sch.steps}
	res.Calls, res.Effects, _ = h.Counts()
	res.Faults = int(w.faults.Load())
	return res
}

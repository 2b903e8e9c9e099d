package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/workload"
)

// Outcome is what a run produced: its history, the checker's verdict and
// the measured summary.
type Outcome struct {
	History *history.History
	// Report holds the verdict (Report.Verdict) and the violations.
	Report checker.Report
	// Summary holds the run's figures (reports.Measure) and its
	// threshold misses.
	Summary *reports.Summary
	// Seed is the run's seed (the Spec's, or the one picked).
	Seed int64
	// DriverOpsPerSec is the driver's throughput in recorded operations
	// (zero when the clients ran in worker processes).
	DriverOpsPerSec float64
	// Warning is a backend configuration problem the run went on with.
	Warning string
	// Ledger counts the applied and rejected effects.
	Ledger workload.LedgerStats
	// Recovery is whether the recovery hook was on.
	Recovery bool
	// Duration and Clients are the run's, after the overrides.
	Duration time.Duration
	Clients  int
	// Dir is the run directory, when one was written.
	Dir string
	// Replay is the command line that repeats the run.
	Replay string
	// Usage is what the store asked of its backend during the traffic,
	// when the store reports it (UsageReporter); nil otherwise.
	Usage *StoreUsage
	// Latency, when set before Finish, is the latency of every call
	// merged from the histograms the worker processes sent
	// (reports.Options.Overall): the summary's figures and the p99
	// threshold come from it. Nil: measured from the history.
	Latency *reports.Latency
}

// Verdict returns the checker's verdict.
func (o *Outcome) Verdict() checker.Verdict { return o.Report.Verdict }

// Run runs sp end to end in this process: opens the store, the sink and
// the faults, drives the workload, assembles and checks the history,
// measures it, and writes the run directory when sp.Out is set. A run
// that produced a verdict returns a nil error, whatever the verdict;
// errors wrap ErrConfig or ErrEnvironment, or are ctx's. A run whose ctx
// ends during the traffic writes the history recorded so far (unchecked,
// its effects unresolved, with the faults injected so far) to sp.Out, when
// set, and returns ctx's error.
func Run(ctx context.Context, sp Spec) (*Outcome, error) {
	p, err := Prepare(ctx, sp)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	sink, err := p.openSink(ctx)
	if err != nil {
		return nil, err
	}
	cfg := p.Config
	cfg.Sink = sink
	cfg.Engine.Recovery = p.Recovery
	if cfg, err = workload.Check(cfg); err != nil {
		return nil, ConfigError("%w", err)
	}
	inj, err := chaos.New(withNow(p.Spec.Scenario.ChaosConfig(cfg.Seed, cfg.Duration)))
	if err != nil {
		return nil, ConfigError("scenario %s: %w", p.Spec.Scenario.Name, err)
	}
	cfg.Faults = &withBackend{Injector: inj, env: p}
	if t := p.Spec.Faults; t != nil && t.ClientTimeout > 0 {
		cfg.Retry.Timeout = t.ClientTimeout
	}
	hdr := p.Header(cfg)
	cfg.Recorder = history.NewRecorder()
	stop := p.watch(&cfg, sink)
	wctx, stopWatch := p.WatchBackend(ctx)
	res, err := workload.Run(wctx, cfg)
	stop()
	var usage *StoreUsage
	if u, ok := cfg.Store.(UsageReporter); ok {
		v := u.RunUsage()
		usage = &v
	}
	if werr := stopWatch(); werr != nil && ctx.Err() == nil {
		return nil, werr
	}
	if err != nil {
		if errors.Is(err, workload.ErrConfig) {
			return nil, ConfigError("%w", err)
		}
		if res != nil && ctx.Err() != nil && p.Spec.Out != "" {
			h := res.Recorder.History(hdr)
			h.Ops = append(append(h.Ops, inj.Windows()...), p.Faults.Windows()...)
			return nil, SavePartial(p.Spec.Out, h, err)
		}
		return nil, err
	}
	if err := p.CheckBackend(ctx); err != nil {
		return nil, err
	}
	ledger, lookup, err := settle(ctx, sink, res.Ledger, cfg.Keys.Prefix)
	if err != nil {
		return nil, err
	}
	p.Purge(ctx)
	if err := p.Faults.Err(); err != nil {
		return nil, EnvironmentError(err)
	}
	h := res.Recorder.History(hdr)
	h.Ops = append(h.Ops, inj.Windows()...)
	history.SortByCall(h.Ops)
	h.ResolveEffects(func(op *history.Op) (bool, bool) { return lookup(op.Key, op.Exec) })
	o := &Outcome{History: h, DriverOpsPerSec: res.OpsPerSec(), Ledger: ledger.Stats(),
		Duration: cfg.Duration, Clients: cfg.Clients, Replay: ReplayCommand(p.Spec, cfg), Usage: usage}
	p.timed = true
	return p.Finish(o)
}

// openSink opens the run's sink: the engine's transactional sink, or an
// in-memory one.
func (p *Prepared) openSink(ctx context.Context) (workload.Sink, error) {
	if p.Spec.Sink == workload.SinkTx {
		return p.OpenTxSink(ctx)
	}
	s, err := workload.NewSink(p.Spec.Sink)
	if err != nil {
		return nil, ConfigError("%w", err)
	}
	return s, nil
}

// watch shows the run to the spec's progress, if any, until stop.
func (p *Prepared) watch(cfg *workload.Config, sink workload.Sink) (stop func()) {
	pr := p.Spec.Progress
	if pr == nil {
		return func() {}
	}
	cfg.Live = pr.Latency()
	rec := cfg.Recorder
	lk, _ := sink.(workload.LedgerKeeper)
	return pr.Watch(func() LiveStats {
		if lk == nil { // a ledger read back after the run
			return LiveStats{Ops: rec.Len(), Calls: rec.LenKind(history.KindCall)}
		}
		s := lk.Ledger().Stats()
		return LiveStats{Ops: rec.Len(), Calls: rec.LenKind(history.KindCall), Effects: s.Applied + s.Rejected, Doubled: s.Doubled}
	}, cfg.Duration)
}

// settle returns the run's ledger and the lookup that resolves its
// effects: the sink's own, or, for a sink whose ledger lives in a backend,
// the ledger read back, which is then the whole truth (an effect it lacks
// was not applied: rejected, or rolled back with its transaction).
func settle(ctx context.Context, sink workload.Sink, own *workload.Ledger, prefix string) (*workload.Ledger, func(key, exec string) (bool, bool), error) {
	r, ok := sink.(workload.LedgerReader)
	if !ok {
		return own, own.Lookup, nil
	}
	es, err := r.ReadLedger(ctx, prefix, nil)
	if err != nil {
		return nil, nil, EnvironmentError(err)
	}
	l := workload.NewLedgerOf(es)
	return l, func(key, exec string) (bool, bool) {
		applied, _ := l.Lookup(key, exec)
		return applied, true
	}, nil
}

func withNow(c chaos.Config) chaos.Config {
	c.Now = history.Now
	return c
}

// withBackend is the run's fault injector: the scenario's, plus the
// backend faults, which start and stop with the traffic.
type withBackend struct {
	*chaos.Injector
	env *Prepared
}

func (f *withBackend) Start() { f.Injector.Start(); f.env.Faults.Start() }
func (f *withBackend) Stop()  { f.env.Faults.Stop(); f.Injector.Stop() }

var _ workload.Faults = (*withBackend)(nil)

// SavePartial writes the history of a run cut short by its ctx to dir and
// returns cause, wrapped with what was written.
func SavePartial(dir string, h *history.History, cause error) error {
	history.SortByCall(h.Ops)
	if err := WriteHistory(dir, h); err != nil {
		return fmt.Errorf("%w (history so far not written: %v)", cause, err)
	}
	return fmt.Errorf("%w (history so far written to %s)", cause, dir)
}

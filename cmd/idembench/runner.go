package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// runSpec is one fully resolved run: what `idembench run` does, and what
// tests call directly.
type runSpec struct {
	Scenario *scenarios.Scenario
	// ScenarioArg is the --scenario value, for the replay command.
	ScenarioArg string
	Backend     string
	Engine      string
	Sink        string
	Recovery    bool
	Seed        int64
	Duration    time.Duration // zero: the scenario's
	Clients     int           // zero: the scenario's
	Rate        float64       // negative: the scenario's
	Out         string        // run directory; empty writes nothing
	RedisURL    string
	PostgresURL string
	// Progress shows the run's progress while it runs; nil shows nothing.
	Progress *progress
	// CheckTimeout is the checker's linearizability budget.
	CheckTimeout time.Duration
	// Thresholds are the performance limits (exit 4 when missed).
	Thresholds reports.Thresholds
	// BackendFaults are restarts and network faults on the backend; nil
	// means none.
	BackendFaults *backendFaults
}

// runOutcome is what a run produced.
type runOutcome struct {
	History *history.History
	Report  checker.Report
	// Summary holds the run's figures (reports.Measure) and its threshold
	// misses.
	Summary *reports.Summary
	// DriverOpsPerSec is the driver's throughput in recorded operations.
	DriverOpsPerSec float64
	// Warning is a backend configuration problem the run went on with.
	Warning  string
	Ledger   workload.LedgerStats
	Recovery bool // effective: requested and supported by the sink
	Duration time.Duration
	Clients  int
	Dir      string
	Replay   string
}

// execute runs sp: builds the store, sink and fault injector, drives the
// workload, assembles and checks the history, and writes the run directory.
func execute(ctx context.Context, sp runSpec) (*runOutcome, error) {
	sc := sp.Scenario
	env, err := openBackendFaults(ctx, &sp)
	if err != nil {
		return nil, err
	}
	defer env.close()
	st, sink, err := openStoreAndSink(ctx, sp)
	if err != nil {
		return nil, err
	}
	defer st.close()
	_, canRecover := sink.(workload.Recoverer)
	recovery := sp.Recovery && canRecover

	cfg := sc.Workload(sp.Duration)
	cfg.Seed = sp.Seed
	cfg.Store = st.store
	cfg.Sink = sink
	cfg.Engine.Recovery = recovery
	if sp.Clients > 0 {
		cfg.Clients = sp.Clients
	}
	if sp.Rate >= 0 {
		cfg.Rate = sp.Rate
	}
	if st.persistent {
		cfg.Keys.Prefix = "r" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.FormatUint(uint64(sp.Seed), 36)
	}
	if cfg, err = workload.Check(cfg); err != nil {
		return nil, usageErr("%v", err)
	}
	inj, err := chaos.New(withNow(sc.ChaosConfig(sp.Seed, cfg.Duration)))
	if err != nil {
		return nil, usageErr("scenario %s: %v", sc.Name, err)
	}
	cfg.Faults = env.wrap(inj)
	if bf := sp.BackendFaults; bf != nil && bf.RetryTimeout > 0 {
		cfg.Retry.Timeout = bf.RetryTimeout
	}

	hdr := history.Header{
		Tool:     "idembench " + version,
		Scenario: sc.Name,
		Seed:     sp.Seed,
		Backend:  describeBackend(sp.Backend, sp.Engine),
		Engine:   engineLabel(sp.Engine, sp.Sink, recovery),
		Start:    time.Now(),
		LeaseTTL: cfg.Engine.LeaseTTL,
		Options:  options(sp, cfg, recovery),
	}
	cfg.Recorder = history.NewRecorder() // shared with the progress line
	cfg.Live = sp.Progress.liveLatency()
	stopProgress := sp.Progress.watch(cfg.Recorder, sink.Ledger(), cfg.Duration)
	res, err := workload.Run(ctx, cfg)
	stopProgress()
	if err != nil {
		if errors.Is(err, workload.ErrConfig) {
			return nil, usageErr("%v", err)
		}
		return nil, err
	}
	lookup := res.Ledger.Lookup
	if tx, ok := sink.(*pgTxSink); ok {
		if err := tx.load(ctx, cfg.Keys.Prefix); err != nil {
			return nil, envErr(err)
		}
		lookup = tx.lookup
	}
	if err := env.err(); err != nil {
		return nil, envErr(err)
	}
	h := assemble(hdr, res, inj, lookup)
	env.addWindows(h)
	out := &runOutcome{
		History:         h,
		DriverOpsPerSec: res.OpsPerSec(),
		Warning:         st.warning,
		Ledger:          res.Ledger.Stats(),
		Recovery:        recovery,
		Duration:        cfg.Duration,
		Clients:         cfg.Clients,
		Replay:          replayCommand(sp, cfg),
	}
	return finishRun(sp, out)
}

// openStoreAndSink opens the store and builds the effect sink. --sink tx
// lives in PostgreSQL, next to the records: with another backend or engine
// it is a usage error.
func openStoreAndSink(ctx context.Context, sp runSpec) (*openedStore, workload.Sink, error) {
	if sp.Sink == workload.SinkTx && (sp.Backend != backendPostgres || sp.Engine != engineIdem) {
		return nil, nil, usageErr("--sink tx (Postgres transactional mode) needs --backend postgres and --engine idem")
	}
	var sink workload.Sink
	if sp.Sink != workload.SinkTx {
		var err error
		if sink, err = workload.NewSink(sp.Sink); err != nil {
			return nil, nil, usageErr("--sink: %v", err)
		}
	}
	st, err := openStore(ctx, sp.Backend, sp.Engine, sp.RedisURL, sp.PostgresURL)
	if err != nil {
		return nil, nil, err
	}
	if sink == nil {
		if sink, err = newPgTxSink(ctx, st.pg, st.pool); err != nil {
			st.close()
			return nil, nil, envErr(err)
		}
	}
	return st, sink, nil
}

func withNow(c chaos.Config) chaos.Config {
	c.Now = history.Now
	return c
}

// assemble builds the run's history: the recorded calls and effects plus
// the injected fault windows, sorted by call time, with effects resolved
// against the ledger.
func assemble(hdr history.Header, res *workload.Result, inj *chaos.Injector, lookup func(key, exec string) (applied, ok bool)) *history.History {
	h := res.Recorder.History(hdr)
	for _, w := range inj.Windows() {
		h.Ops = append(h.Ops, history.Op{
			Kind:   history.KindFault,
			Client: -1,
			Worker: -1,
			Key:    w.Key,
			Token:  uint64(w.Token),
			Call:   w.Start,
			Return: w.End,
			Label:  w.Label,
		})
	}
	history.SortByCall(h.Ops)
	h.ResolveEffects(func(op *history.Op) (bool, bool) { return lookup(op.Key, op.Exec) })
	return h
}

func engineLabel(engine, sink string, recovery bool) string {
	s := engine + " sink=" + sink
	if recovery {
		return s + " recovery=on"
	}
	return s + " recovery=off"
}

func options(sp runSpec, cfg workload.Config, recovery bool) map[string]string {
	hb := "on"
	switch {
	case cfg.Engine.Heartbeat < 0:
		hb = "off"
	case cfg.Engine.Heartbeat > 0:
		hb = cfg.Engine.Heartbeat.String()
	}
	m := map[string]string{
		"sink":          sp.Sink,
		"recovery":      strconv.FormatBool(recovery),
		"heartbeat":     hb,
		"conflict_wait": cfg.Engine.ConflictWait.String(),
		"duration":      cfg.Duration.String(),
		"clients":       strconv.Itoa(cfg.Clients),
		"rate":          strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
		"scenario_src":  sp.Scenario.Source,
	}
	if sp.Recovery && !recovery && sp.Sink != workload.SinkTx {
		m["recovery_note"] = "requested, but the " + sp.Sink + " sink cannot answer recovery lookups"
	}
	return m
}

// replayCommand returns the exact command line that repeats the run.
func replayCommand(sp runSpec, cfg workload.Config) string {
	args := []string{"idembench", "run",
		"--scenario", shellQuote(sp.ScenarioArg),
		"--backend", sp.Backend,
		"--engine", sp.Engine,
		"--sink", sp.Sink,
	}
	if sp.Recovery {
		args = append(args, "--recovery")
	} else {
		args = append(args, "--no-recovery")
	}
	args = append(args,
		"--seed", strconv.FormatInt(sp.Seed, 10),
		"--duration", cfg.Duration.String(),
		"--clients", strconv.Itoa(cfg.Clients),
		"--rate", strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
	)
	if sp.BackendFaults != nil {
		args = append(args, sp.BackendFaults.ReplayArgs...)
	}
	return strings.Join(args, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeHistory saves h as dir/history.jsonl (reports.WriteRunReport writes
// the rest of the run directory).
func writeHistory(dir string, h *history.History) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		return err
	}
	if err := history.Encode(f, h); err != nil {
		f.Close()
		return fmt.Errorf("write history: %w", err)
	}
	return f.Close()
}

// verdictCode maps a verdict to its exit code.
func verdictCode(v checker.Verdict) int {
	switch v {
	case checker.VerdictOK:
		return exitOK
	case checker.VerdictViolation:
		return exitViolation
	}
	return exitInconclusive
}

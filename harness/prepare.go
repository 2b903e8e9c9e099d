package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// Prepared is a run with its store open and its backend faults ready:
// what Run does before the traffic, and what harness/multiproc builds a
// run of worker processes on. Close it after the run.
type Prepared struct {
	// Spec is the run's spec with every default filled in: Scenario
	// loaded, Backend, Sink and Overrides.Seed set.
	Spec Spec
	// Config is the workload with the overrides applied, the per-run key
	// prefix (persistent backends), Seed, Store and StoreClock set; Sink,
	// Faults and Recorder are the caller's.
	Config workload.Config
	// Env is what the store was opened with (URL: the faulted one).
	Env Env
	// SinkURL is the server of a backend sink: the Spec's URL, outside
	// the reach of the backend faults, so that a fault tests the engine
	// and not the harness's own bookkeeping.
	SinkURL string
	// Faults is the backend side of the faults (backendfault.None when
	// there are none).
	Faults backendfault.Env
	// Recovery is whether the recovery hook is on: requested and the sink
	// is the fenced one.
	Recovery bool

	// timed is set by Run, which drives the whole run in this process on
	// the wall clock: Finish adds the timing invariants (T1, T2) then.
	timed bool

	mu       sync.Mutex
	warnings []string
	closers  []io.Closer
}

// Prepare checks sp, loads its scenario, opens the backend faults and the
// store. Errors wrap ErrConfig or ErrEnvironment.
func Prepare(ctx context.Context, sp Spec) (*Prepared, error) {
	sp, err := withDefaults(sp)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Spec: sp, SinkURL: sp.URL}
	p.Recovery = !sp.NoRecovery && sp.Sink == workload.SinkFenced
	env, url, err := backendfault.Open(ctx, sp.Faults, sp.URL, sp.Overrides.Seed)
	if err != nil {
		if errors.Is(err, backendfault.ErrPlan) {
			return nil, ConfigError("%w", err)
		}
		return nil, EnvironmentError(err)
	}
	p.Faults = env
	p.closers = append(p.closers, env)
	p.Config = WorkloadConfig(sp.Scenario, sp.Overrides)
	p.Config.Completer.Pass = sp.Engine.Completer
	p.Env = Env{Backend: sp.Backend, URL: url, Clock: sp.Clock, Warn: p.warn}
	if sp.Backend.Persistent() || sp.Engine.Persistent {
		p.Config.Keys.Prefix = runPrefix(sp.Overrides.Seed)
		p.Env.Prefix = p.Config.Keys.Prefix
	}
	store, err := p.OpenStore(ctx, p.Env)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Config.Store, p.Config.StoreClock = store, sp.Clock
	return p, nil
}

// Validate checks sp as Prepare does before it opens anything: the
// engine, backend, URL presence, scenario, sink, overrides and the
// workload they make. It does no I/O beyond reading a scenario file.
// Errors wrap ErrConfig.
func (sp Spec) Validate() error {
	sp, err := withDefaults(sp)
	if err != nil {
		return err
	}
	if err := WorkloadConfig(sp.Scenario, sp.Overrides).Validate(); err != nil {
		return ConfigError("%w", err)
	}
	return nil
}

// withDefaults fills in sp's defaults and checks what can be checked
// before anything is opened.
func withDefaults(sp Spec) (Spec, error) {
	if sp.Engine.Open == nil {
		return sp, ConfigError("no engine: Spec.Engine.Open is required")
	}
	if sp.Backend == "" {
		sp.Backend = Memory
	}
	if _, err := ParseBackend(string(sp.Backend)); err != nil {
		return sp, err
	}
	if err := sp.Engine.check(sp.Backend); err != nil {
		return sp, err
	}
	if _, err := ParseHistoryMode(string(sp.History)); err != nil {
		return sp, err
	}
	if sp.Backend.Persistent() && sp.URL == "" {
		return sp, ConfigError("backend %s needs a URL", sp.Backend)
	}
	if sp.Scenario == nil {
		if sp.ScenarioName == "" {
			sp.ScenarioName = "default"
		}
		sc, err := scenarios.Load(sp.ScenarioName)
		if err != nil {
			return sp, ConfigError("scenario: %w", err)
		}
		sp.Scenario = sc
	}
	if sp.ScenarioName == "" {
		sp.ScenarioName = sp.Scenario.Name
	}
	switch sp.Sink {
	case "":
		sp.Sink = workload.SinkFenced
	case workload.SinkPlain, workload.SinkFenced:
	case workload.SinkTx:
		if sp.Engine.OpenTxSink == nil {
			return sp, ConfigError("sink tx (transactional mode): engine %s has none", sp.Engine.Name)
		}
	default:
		return sp, ConfigError("sink %q: want plain, fenced or tx", sp.Sink)
	}
	if o := sp.Overrides; o.Duration < 0 || o.Clients < 0 || o.Rate < 0 {
		return sp, ConfigError("duration, clients and rate must not be negative")
	}
	if err := CheckSeed(sp.Overrides.Seed); err != nil {
		return sp, err
	}
	sp.Overrides.Seed = Seed(sp.Overrides.Seed)
	if sp.Tool == "" {
		sp.Tool = "idembench"
	}
	return sp, nil
}

// OpenStore opens the engine's store for env; the store is closed with p.
func (p *Prepared) OpenStore(ctx context.Context, env Env) (idem.Store, error) {
	env.Warn = p.warn
	st, c, err := p.Spec.Engine.Open(ctx, env)
	if err != nil {
		return nil, EnvironmentError(err)
	}
	p.closeWith(c)
	return st, nil
}

// OpenTxSink opens the engine's transactional sink on the store's server;
// it is closed with p.
func (p *Prepared) OpenTxSink(ctx context.Context) (workload.TxSink, error) {
	s, c, err := p.Spec.Engine.OpenTxSink(ctx, p.Env)
	if err != nil {
		return nil, EnvironmentError(err)
	}
	p.closeWith(c)
	return s, nil
}

func (p *Prepared) closeWith(c io.Closer) {
	if c != nil {
		p.mu.Lock()
		p.closers = append(p.closers, c)
		p.mu.Unlock()
	}
}

func (p *Prepared) warn(msg string) {
	p.mu.Lock()
	p.warnings = append(p.warnings, msg)
	p.mu.Unlock()
}

// Warning returns the configuration problems the run went on with.
func (p *Prepared) Warning() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.warnings, "; ")
}

// Close closes what p opened, last first.
func (p *Prepared) Close() {
	p.mu.Lock()
	cs := p.closers
	p.closers = nil
	p.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		_ = cs[i].Close()
	}
}

// Header returns the history header of the run, with the effective
// configuration (cfg after workload.Check) in its options.
func (p *Prepared) Header(cfg workload.Config) history.Header {
	sp := p.Spec
	backend := string(sp.Backend)
	if sp.Engine.Name != ReferenceEngine {
		backend = fmt.Sprintf("%s (%s)", sp.Engine.Name, sp.Backend)
	}
	rec := "off"
	if p.Recovery {
		rec = "on"
	}
	hb := "on"
	switch {
	case cfg.Engine.Heartbeat < 0:
		hb = "off"
	case cfg.Engine.Heartbeat > 0:
		hb = cfg.Engine.Heartbeat.String()
	}
	opts := map[string]string{
		"sink":          sp.Sink,
		"recovery":      strconv.FormatBool(p.Recovery),
		"heartbeat":     hb,
		"conflict_wait": cfg.Engine.ConflictWait.String(),
		"duration":      cfg.Duration.String(),
		"clients":       strconv.Itoa(cfg.Clients),
		"rate":          strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
		"scenario_src":  sp.Scenario.Source,
	}
	if cfg.Keys.Prefix != "" {
		opts["key_prefix"] = cfg.Keys.Prefix
	}
	if cfg.Engine.ClockSkew > 0 {
		opts["clock_skew"] = cfg.Engine.ClockSkew.String()
	}
	if cfg.Batch > 1 {
		opts["batch"] = strconv.Itoa(cfg.Batch)
	}
	if c := cfg.Completer; c.Count > 0 {
		which := "reference"
		if c.Pass != nil {
			which = "engine's own"
		}
		opts["completer"] = fmt.Sprintf("%d every %s, older than %s (%s)", c.Count, c.Every, c.OlderThan, which)
	}
	if !sp.NoRecovery && !p.Recovery && sp.Sink != workload.SinkTx {
		opts["recovery_note"] = "requested, but the " + sp.Sink + " sink cannot answer recovery lookups"
	}
	return history.Header{
		Format: history.Format, Version: history.FormatVersion, Clock: history.ClockName,
		Tool:      sp.Tool,
		Scenario:  sp.Scenario.Name,
		Seed:      sp.Overrides.Seed,
		Backend:   backend,
		Engine:    sp.Engine.Name + " sink=" + sp.Sink + " recovery=" + rec,
		Start:     time.Now(),
		LeaseTTL:  cfg.Engine.LeaseTTL,
		Retention: retention(cfg),
		Options:   opts,
	}
}

// ReferenceEngine is the name of the reference engine (package idem on
// the three backends), registered by harness/engines.
const ReferenceEngine = "idem"

// retention returns how long the run's engine keeps an answer: the
// workload's Engine.Retention, or idem.DefaultRetention when it is zero.
func retention(cfg workload.Config) time.Duration {
	if cfg.Engine.Retention > 0 {
		return cfg.Engine.Retention
	}
	return idem.DefaultRetention
}

// purgeTimeout bounds the deletion of a run's data at its end.
const purgeTimeout = 30 * time.Second

// Purge deletes the run's keys and rows on a persistent backend through
// the engine's Purge (on the Spec's server: a private one of the backend
// faults goes away with them), unless Spec.KeepData is set or the engine
// has none. It is called after the run's ledger was read back; a failure
// is a warning of the run, not an error. It runs even when ctx has ended,
// within purgeTimeout.
func (p *Prepared) Purge(ctx context.Context) {
	sp := p.Spec
	if sp.KeepData || !sp.Backend.Persistent() || sp.Engine.Purge == nil || p.Env.Prefix == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), purgeTimeout)
	defer cancel()
	env := p.Env
	env.URL = sp.URL
	if err := sp.Engine.Purge(ctx, env); err != nil {
		p.warn("run data not deleted (idembench clean removes it): " + err.Error())
	}
}

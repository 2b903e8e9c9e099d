package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// runCmd is `idembench run`.
type runCmd struct {
	Scenario     string        `help:"Built-in scenario name or path to a scenario YAML file (built-in: ${scenarios})." default:"default" placeholder:"NAME|FILE"`
	Backend      string        `help:"Store backend: memory, redis or postgres." default:"memory" enum:"memory,redis,postgres"`
	RedisURL     string        `help:"Redis URL for --backend redis (default: $IDEM_REDIS_URL, else the docker-compose.yml server redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL  string        `help:"PostgreSQL URL for --backend postgres (default: $IDEM_POSTGRES_URL, else the docker-compose.yml server postgres://postgres:postgres@127.0.0.1:5432/test)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	Engine       string        `help:"Engine under test: idem (the reference engine) or a known-bad design: ${naive}." default:"idem" placeholder:"NAME"`
	Sink         string        `help:"Effect sink: plain (applies everything), fenced (rejects stale tokens; answers recovery lookups) or tx (Postgres transactional mode)." default:"fenced" enum:"plain,fenced,tx"`
	Recovery     bool          `help:"Install the engine's recovery hook (needs a sink that answers lookups: fenced)." default:"true" negatable:""`
	Duration     time.Duration `help:"Length of the traffic phase (default: the scenario's)."`
	Clients      int           `help:"Concurrent clients, or workers in open loop (default: the scenario's)."`
	Rate         float64       `help:"Open loop at this many requests per second; 0 is closed loop (default: the scenario's)." default:"-1"`
	Seed         int64         `help:"Seed for the workload and the fault schedule; 0 picks a fresh one (printed)."`
	Out          string        `help:"Run directory for history.jsonl, summary.json and violations/ (default: ./idembench-out/<timestamp>)." placeholder:"DIR"`
	NoSave       bool          `help:"Do not write the run directory." name:"no-save"`
	CheckTimeout time.Duration `help:"Budget of the linearizability check; when it runs out the verdict is inconclusive." default:"30s"`
	Workers      int           `help:"Run the clients in this many worker processes (redis or postgres; crashes become SIGKILLs, pauses SIGSTOPs); 0 runs them in this process."`
	backendFaultFlags
	thresholdFlags
}

// thresholdFlags are the performance thresholds of run and compare: a run
// that misses one exits 4. Each flag that is set replaces the scenario's
// threshold of the same figure (scenario field thresholds).
type thresholdFlags struct {
	MaxP99                   time.Duration `help:"Exit 4 when a run's p99 latency is above this (0: the scenario's, if any)." name:"max-p99"`
	MinThroughput            float64       `help:"Exit 4 when a run completes fewer calls per second (0: the scenario's, if any)." placeholder:"CALLS/S"`
	MaxErrorRate             float64       `help:"Exit 4 when a larger fraction of a run's calls ends without a final answer (0: the scenario's, if any)." placeholder:"RATIO"`
	IgnoreScenarioThresholds bool          `help:"Check only the thresholds given as flags, not the scenario's."`
}

// valid reports whether no threshold is negative and the error rate is at
// most 1.
func (t thresholdFlags) valid() bool {
	return t.MaxP99 >= 0 && t.MinThroughput >= 0 && t.MaxErrorRate >= 0 && t.MaxErrorRate <= 1
}

// thresholds returns the thresholds of a run of sc: the scenario's, unless
// ignored, with every flag that is set in place of the scenario's value.
func (t thresholdFlags) thresholds(sc *scenarios.Scenario) reports.Thresholds {
	var th reports.Thresholds
	if !t.IgnoreScenarioThresholds {
		st := sc.Thresholds
		th = reports.Thresholds{MaxP99: st.MaxP99, MinThroughput: st.MinThroughput, MaxErrorRate: st.MaxErrorRate}
	}
	if t.MaxP99 > 0 {
		th.MaxP99 = t.MaxP99
	}
	if t.MinThroughput > 0 {
		th.MinThroughput = t.MinThroughput
	}
	if t.MaxErrorRate > 0 {
		th.MaxErrorRate = t.MaxErrorRate
	}
	return th
}

func (c *runCmd) Run(ctx context.Context, std stdio, g *globals) error {
	sc, err := scenarios.Load(c.Scenario)
	if err != nil {
		return usageErr("--scenario: %v", err)
	}
	if !slices.Contains(engineNames(), c.Engine) {
		return usageErr("--engine %q: want one of %v", c.Engine, engineNames())
	}
	if c.Duration < 0 || c.Clients < 0 || !c.thresholdFlags.valid() {
		return usageErr("--duration, --clients and the thresholds must not be negative (and --max-error-rate at most 1)")
	}
	seed := c.Seed
	if seed == 0 {
		seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	out := c.Out
	if out == "" && !c.NoSave {
		out = filepath.Join("idembench-out", time.Now().Format("20060102-150405.000"))
	}
	if c.NoSave {
		out = ""
	}
	sp := runSpec{
		Scenario: sc, ScenarioArg: c.Scenario,
		Backend: c.Backend, Engine: c.Engine, Sink: c.Sink, Recovery: c.Recovery,
		Seed: seed, Duration: c.Duration, Clients: c.Clients, Rate: c.Rate,
		Out: out, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		CheckTimeout: c.CheckTimeout,
		Thresholds:   c.thresholds(sc),
		Progress:     newProgress(std.err, g.NoProgress, ""),
	}
	u := resolveBackendURLs(&sp)
	text := textOut(std, g)
	fmt.Fprintf(text, "idembench run: scenario %s · backend %s · engine %s · sink %s · seed %d\n", sc.Name, c.Backend, c.Engine, c.Sink, seed)
	if c.backendFaultFlags.any() {
		bf, stop, err := c.backendFaultFlags.open(ctx, c.Backend)
		defer stop()
		if err != nil {
			return err
		}
		sp.BackendFaults = bf
	}
	var o *runOutcome
	switch {
	case c.Workers < 0:
		return usageErr("--workers must not be negative")
	case c.Workers > 0:
		o, err = executeWorkers(ctx, sp, c.Workers)
	default:
		o, err = execute(ctx, sp)
	}
	if err != nil {
		return withBackendHint(err, c.Backend, u)
	}
	printRun(text, o)
	if err := writeSummaryJSON(std, g, o.Summary); err != nil {
		return err
	}
	code := verdictCode(o.Report.Verdict)
	if code == exitOK && len(missesOf(o.Summary)) > 0 {
		code = exitThreshold
	}
	if code != exitOK {
		return &exitError{code: code, err: fmt.Errorf("verdict %s", o.Report.Verdict)}
	}
	return nil
}

package cli

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/multiproc"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
)

// runCmd is `idembench run`.
type runCmd struct {
	Backend      string        `help:"Store backend: memory, redis, postgres or dynamodb (endpoint: $IDEM_DYNAMO_URL, else http://127.0.0.1:8000)." default:"memory" enum:"memory,redis,postgres,dynamodb"`
	Engine       string        `help:"Engine under test (this binary: ${engines})." default:"idem" placeholder:"NAME"`
	Sink         string        `help:"Effect sink: plain (applies everything), fenced (rejects stale tokens; answers recovery lookups) or tx (the engine's transactional mode: Postgres)." default:"fenced" enum:"plain,fenced,tx"`
	Recovery     bool          `help:"Install the engine's recovery hook (needs a sink that answers lookups: fenced)." default:"true" negatable:""`
	Out          string        `help:"Run directory for history.jsonl, summary.json and violations/ (default: ./idembench-out/<timestamp>): missing, empty, or an earlier idembench run, which is replaced." placeholder:"DIR"`
	NoSave       bool          `help:"Do not write the run directory (not with --out)." name:"no-save"`
	History      string        `help:"What the run directory keeps of the history: full (every op: tens of MB, 60 to 95 MB for the default scenario), sampled (every op of 1 key in 16 and every fault, about a sixteenth: check re-checks those keys) or none (no history.jsonl: nothing to re-check)." default:"full" enum:"full,sampled,none"`
	Workers      int           `help:"Run the clients in this many worker processes (redis or postgres, or memory with --join; crashes become SIGKILLs, pauses SIGSTOPs): 0 runs them in this process, else 1 to 64 and at most --clients (the clients are split among the workers)."`
	Join         string        `help:"With --workers: the workers are processes started elsewhere (other hosts, a Kubernetes Indexed Job, SSH) that join this run through the NATS JetStream server at URL; the run prints the command each one runs. Their crashes and pauses are injected in each worker's engine, as in a one-process run. On --backend memory each worker owns a store and ledger and sends its ledger with its history." placeholder:"URL"`
	JoinWait     time.Duration `help:"With --join: how long to wait for each worker to join (1s to 1h)." default:"1m" name:"join-wait"`
	JoinSpanKeys bool          `help:"With --join: the workers share the run's keys (a key's holder and successor on different hosts, its order judged across clocks to within their bounds) instead of each drawing its own." name:"join-span-keys"`
	JoinRun      string        `help:"With --join: the run's name on the NATS server, which the workers are given (letters, digits, - and _; default: a fresh one, printed)." name:"join-run" placeholder:"NAME"`
	workloadFlags
	faultFlags
	thresholdFlags
}

// workloadFlags are the flags of run and compare that choose the workload,
// the servers, the seed and the check. The pointer fields are nil when the
// flag was left out, so that an explicit zero can be told from it.
type workloadFlags struct {
	Scenario     string         `help:"Built-in scenario name or path to a scenario YAML file (built-in: ${scenarios})." default:"default" placeholder:"NAME|FILE"`
	Duration     *time.Duration `help:"Length of the traffic phase of a run, at most 24h (default: the scenario's)."`
	Clients      *int           `help:"Concurrent clients, or workers in open loop: 1 to 10000 (default: the scenario's)."`
	Rate         *float64       `help:"Open loop at this many requests per second, at most 1000000; 0 is closed loop (default: the scenario's)."`
	Seed         int64          `help:"Seed for the workload and the fault schedule, the same for every run of a command: 0 to 2^53-1; 0 picks a fresh one (printed)."`
	RedisURL     string         `help:"Redis URL for --backend redis (default: $IDEM_REDIS_URL, else the docker-compose.yml server redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL  string         `help:"PostgreSQL URL for --backend postgres (default: $IDEM_POSTGRES_URL, else the docker-compose.yml server postgres://postgres:postgres@127.0.0.1:5432/test)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	ClockSkew    *time.Duration `help:"Clock-skew fault: each app server's clock is off by up to this much, drawn from the seed (0 to 10m; default: the scenario's engine.clock_skew)." name:"clock-skew"`
	CheckTimeout *time.Duration `help:"Budget of the linearizability check of a run, above 0 and at most 1h (default: 30s); when it runs out the verdict is inconclusive."`
	KeepData     bool           `help:"Keep the run's keys and rows on Redis or PostgreSQL (by default a run deletes its own at the end; idembench clean removes older runs')."`
}

// spec is the harness spec of a run of sc with seed: eng on backend with
// sink, its recovery hook installed or not, and th's thresholds (without
// History, Out, Progress and Faults), and the backend's URL.
func (w workloadFlags) spec(th thresholdFlags, eng harness.StoreFactory, backend, sink string, recovery bool, sc *scenarios.Scenario, seed int64) (harness.Spec, backendURL) {
	u := resolveBackendURL(backend, w.RedisURL, w.PostgresURL)
	return harness.Spec{
		Engine: eng, Backend: harness.Backend(backend), URL: u.url,
		Scenario: sc, ScenarioName: w.Scenario, Sink: sink, NoRecovery: !recovery,
		Overrides:    w.overrides(seed),
		CheckTimeout: w.checkTimeout(),
		Thresholds:   th.thresholds(sc),
		Tool:         "idembench " + Version,
		Program:      invokedAs(),
		KeepData:     w.KeepData,
	}, u
}

// defaultCheckTimeout is the check budget when --check-timeout is left out.
const defaultCheckTimeout = 30 * time.Second

// resolve loads --scenario, applies the workload flags to it through
// scenarios.Overrides (which checks their limits: an error names the flag)
// and picks the seed.
func (w workloadFlags) resolve(th thresholdFlags) (*scenarios.Scenario, int64, error) {
	sc, err := scenarios.Load(w.Scenario)
	if err != nil {
		return nil, 0, usage("--scenario: %w", err)
	}
	if err := th.validate(); err != nil {
		return nil, 0, err
	}
	if err := harness.CheckSeed(w.Seed); err != nil {
		return nil, 0, usage("--seed: %v", err)
	}
	flags := []struct {
		name string
		set  bool
		o    scenarios.Overrides
	}{
		{"--duration", w.Duration != nil, scenarios.Overrides{Duration: w.Duration}},
		{"--clients", w.Clients != nil, scenarios.Overrides{Clients: w.Clients}},
		{"--rate", w.Rate != nil, scenarios.Overrides{Rate: w.Rate}},
		{"--check-timeout", w.CheckTimeout != nil, scenarios.Overrides{CheckTimeout: w.CheckTimeout}},
		{"--clock-skew", w.ClockSkew != nil, scenarios.Overrides{ClockSkew: w.ClockSkew}},
	}
	for _, f := range flags {
		if !f.set {
			continue
		}
		if _, err := sc.Apply(f.o); err != nil {
			return nil, 0, usage("%s: %w", f.name, err)
		}
	}
	all := scenarios.Overrides{Duration: w.Duration, Clients: w.Clients, Rate: w.Rate, CheckTimeout: w.CheckTimeout, ClockSkew: w.ClockSkew}
	if sc, err = sc.Apply(all); err != nil {
		return nil, 0, usage("--duration, --clients and --rate together: %w", err)
	}
	return sc, harness.Seed(w.Seed), nil
}

// checkTimeout returns the check budget of --check-timeout.
func (w workloadFlags) checkTimeout() time.Duration {
	if w.CheckTimeout == nil {
		return defaultCheckTimeout
	}
	return *w.CheckTimeout
}

// overrides returns the harness overrides of a scenario resolve returned:
// the flags are in the scenario already, so only the seed is left.
func (w workloadFlags) overrides(seed int64) harness.Overrides {
	return harness.Overrides{Seed: seed}
}

// thresholdFlags are the performance thresholds of run and compare: a run
// that misses one exits 4. Each flag that is set replaces the scenario's
// threshold of the same figure (scenario field thresholds).
type thresholdFlags struct {
	MaxP99                   time.Duration `help:"Exit 4 when a run's p99 latency is above this: 0 (the scenario's, if any) to 24h." name:"max-p99"`
	MinThroughput            float64       `help:"Exit 4 when a run completes fewer calls per second: 0 (the scenario's, if any) or a finite positive number." placeholder:"CALLS/S"`
	MaxErrorRate             float64       `help:"Exit 4 when a larger fraction of a run's calls ends without a final answer: 0 (the scenario's, if any) to 1." placeholder:"RATIO"`
	IgnoreScenarioThresholds bool          `help:"Check only the thresholds given as flags, not the scenario's."`
}

// validate checks the bounds the thresholds' help states (those of a
// scenario file's thresholds).
func (t thresholdFlags) validate() error {
	switch {
	case t.MaxP99 < 0 || t.MaxP99 > scenarios.MaxP99:
		return usage("--max-p99 %s: want 0 to %s", t.MaxP99, scenarios.MaxP99)
	case !(t.MinThroughput >= 0) || math.IsInf(t.MinThroughput, 0): // !(x >= 0) is also true for NaN
		return usage("--min-throughput %g: want 0 or a finite positive number", t.MinThroughput)
	case !(t.MaxErrorRate >= 0 && t.MaxErrorRate <= 1):
		return usage("--max-error-rate %g: want 0 to 1", t.MaxErrorRate)
	}
	return nil
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

func (c *runCmd) Run(ctx context.Context, std stdio, g *globals, reg *harness.Registry) error {
	sp, u, err := c.spec(reg)
	if err != nil {
		return err
	}
	out, err := newOutDir(runDir(c.Out, c.NoSave))
	if err != nil {
		return err
	}
	sp.Out = out.runPath()
	sweepStale()
	if p := newProgress(std.err, g.NoProgress, ""); p != nil {
		sp.Progress = p
	}
	text := textOut(std, g)
	fmt.Fprintf(text, "idembench run: scenario %s · backend %s · engine %s · sink %s · seed %d\n", sp.Scenario.Name, c.Backend, c.Engine, c.Sink, sp.Overrides.Seed)
	plan, stop, err := c.faultFlags.plan(ctx, c.Backend)
	defer stop()
	if err != nil {
		return err
	}
	sp.Faults = plan
	o, err := untilInterrupted(ctx, func() (*harness.Outcome, error) {
		if c.Workers > 0 {
			var opts multiproc.Options
			if c.Join != "" {
				run := c.JoinRun
				if run == "" {
					run = "r" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
				}
				opts.Join = &multiproc.Join{URL: c.Join, Run: run, Wait: c.JoinWait, SpanKeys: c.JoinSpanKeys}
				fmt.Fprintf(std.err, "idembench run: waiting up to %s for %d workers to join run %s; start worker i (0 to %d) with:\n  %s worker --join %s --run %s --index i\n",
					c.JoinWait, c.Workers, run, c.Workers-1, invokedAs(), c.Join, run)
			}
			return multiproc.Run(ctx, sp, c.Workers, opts)
		}
		return harness.Run(ctx, sp)
	})
	if ctx.Err() != nil {
		if cerr := out.commit(); cerr != nil {
			return fmt.Errorf("%w: %v", errInterrupted, cerr)
		}
		return interrupted(out.final)
	}
	if err != nil {
		out.discard()
		return withBackendHint(err, c.Backend, u)
	}
	if err := out.commit(); err != nil {
		return err
	}
	if o.Dir != "" {
		o.Dir = out.final
	}
	for i := range o.Report.Violations { // written into the temporary directory
		v := &o.Report.Violations[i]
		v.VisualizationPath = out.moved(v.VisualizationPath)
	}
	printRun(text, o)
	if err := writeSummaryJSON(std, g, o.Summary); err != nil {
		return err
	}
	if err := verdictError(o.Report.Verdict); err != nil {
		return err
	}
	if len(missesOf(o.Summary)) > 0 {
		return codeError(exitThreshold, "threshold missed")
	}
	return nil
}

// spec checks every flag of the run, without starting or writing anything,
// and returns the harness spec (without Out, Progress and Faults) and the
// backend's URL.
func (c *runCmd) spec(reg *harness.Registry) (harness.Spec, backendURL, error) {
	var sp harness.Spec
	sc, seed, err := c.resolve(c.thresholdFlags)
	if err != nil {
		return sp, backendURL{}, err
	}
	eng, err := reg.Lookup(c.Engine)
	if err != nil {
		return sp, backendURL{}, usage("--engine: %v", err)
	}
	if c.NoSave && c.Out != "" {
		return sp, backendURL{}, usage("--out and --no-save do not go together")
	}
	if err := c.faultFlags.validate(c.Backend); err != nil {
		return sp, backendURL{}, err
	}
	sp, u := c.workloadFlags.spec(c.thresholdFlags, eng, c.Backend, c.Sink, c.Recovery, sc, seed)
	sp.History = harness.HistoryMode(strings.TrimPrefix(c.History, "full"))
	if err := sp.Validate(); err != nil {
		return sp, u, err
	}
	if err := checkWorkers(c.Workers, sp, c.Join != "", c.JoinSpanKeys); err != nil {
		return sp, u, err
	}
	switch {
	case c.JoinRun != "" && c.Join == "":
		return sp, u, usage("--join-run needs --join URL")
	case c.Join != "" && c.Workers == 0:
		return sp, u, usage("--join needs --workers N: the number of workers that join")
	case c.Join != "" && (c.JoinWait < time.Second || c.JoinWait > time.Hour):
		return sp, u, usage("--join-wait %s: want 1s to 1h", c.JoinWait)
	}
	return sp, u, nil
}

// checkWorkers checks --workers for the run of sp: 0, or 1 to
// multiproc.MaxWorkers and at most the run's clients, on a server backend,
// or on memory when the workers join (join) with keys sharded by host
// (not spanKeys).
func checkWorkers(workers int, sp harness.Spec, join, spanKeys bool) error {
	clients := harness.WorkloadConfig(sp.Scenario, sp.Overrides).Clients
	switch {
	case workers == 0:
		return nil
	case workers < 0 || workers > multiproc.MaxWorkers:
		return usage("--workers %d: want 0 (no worker processes) or 1 to %d", workers, multiproc.MaxWorkers)
	case sp.Backend == harness.Memory && !join:
		return usage("%v", multiproc.ErrLocalMemory)
	case sp.Backend == harness.Memory && spanKeys:
		return usage("%v", multiproc.ErrSpanKeysMemory)
	case !sp.Backend.Persistent() && sp.Backend != harness.Memory:
		return usage("--workers needs --backend redis or postgres (effects must outlive a worker process)")
	case workers > clients:
		return usage("--workers %d with %d clients: each worker runs at least one client (use at most %d workers, or more --clients)", workers, clients, clients)
	}
	return nil
}

// runDir returns the run directory of --out and --no-save.
func runDir(out string, noSave bool) string {
	switch {
	case noSave:
		return ""
	case out == "":
		return filepath.Join("idembench-out", time.Now().Format("20060102-150405.000"))
	}
	return out
}

// Help is the detailed help of `idembench run --help`, with examples.
func (c *runCmd) Help() string {
	return `Runs one scenario against one engine configuration: drives the workload
with its faults, records the history, checks invariants I1-I6, prints the
verdict and the figures, and writes the run directory (history.jsonl,
summary.json, report.md, report.html, plots, violations/).

On a terminal a progress line (elapsed time, calls/s, double executions so
far) is redrawn on stderr; otherwise a plain progress line is logged every
5 s. --backend redis and --backend postgres without a URL use
$IDEM_REDIS_URL / $IDEM_POSTGRES_URL, else the docker-compose.yml servers;
a server that does not answer exits 5 with the commands that start one.
The line naming the run directory gives the size of history.jsonl;
--history=sampled keeps a sixteenth of the keys (check re-checks them),
--history=none no history.

Examples:

    idembench run                                    # memory backend, scenario default, ~10 s
    idembench run --scenario gc-pause --sink plain   # an unsafe cell: caught, exit 1
    idembench run --backend redis --duration 5s      # local Redis (docker compose up -d)
    idembench run --max-p99 50ms --min-throughput 1000 --out out/run   # CI gate, exit 4 on a miss

` + exitCodesHelp
}

package matrix

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/harness/multiproc"
	"github.com/idembench/idembench/scenarios"
)

// Options configure Run.
type Options struct {
	// Engine is the engine every cell runs; it needs a transactional mode
	// for the tx cells (the reference engine, harness/engines).
	Engine harness.StoreFactory
	// Quick runs the reduced matrix for CI.
	Quick bool
	// Backends are the backends whose cells run.
	Backends []harness.Backend
	// Seed is every cell's seed, 0 to harness.MaxSeed; zero picks a
	// fresh one.
	Seed int64
	// Duration is each cell's traffic phase: zero means the scenario's
	// (2s with Quick; worker-process cells run at least their own
	// length), else MinDuration to MaxDuration.
	Duration time.Duration
	// RedisURL and PostgresURL are the servers of the cells without a
	// restart; empty means the private servers'.
	RedisURL, PostgresURL string
	// DynamoURL is the DynamoDB endpoint of the dynamodb cells (no private
	// server: they have no restart or failover column).
	DynamoURL string
	// Servers are the private servers of the restart cells.
	Servers Servers
	// CheckTimeout is each cell's linearizability budget, at most
	// MaxCheckTimeout; zero means the checker's default.
	CheckTimeout time.Duration
	// Workers runs the worker-process cells.
	Workers multiproc.Options
	// AMQPURL and NATSURL are the brokers of the consumer cells
	// (backends rabbitmq and nats, brokers.go); ConsumeWorker starts a
	// consumer worker process (consume.Config.WorkerCommand) for their
	// worker-process cells.
	AMQPURL, NATSURL string
	ConsumeWorker    func() *exec.Cmd
	// Faults, when set, runs only the cells of these columns.
	Faults []Fault
	// Done, when set, is called after each cell, with its index (from
	// zero) and the number of cells.
	Done func(i, n int, c *Cell)
}

// Result is a matrix run.
type Result struct {
	Seed  int64   `json:"seed"`
	Quick bool    `json:"quick"`
	Cells []*Cell `json:"cells"`
}

// Differ counts the cells that ran and differ from the theory; Errors the
// cells that could not run.
func (r *Result) Differ() (differ, errors int) {
	for _, c := range r.Cells {
		switch {
		case c.Observed == Error:
			errors++
		case c.Differs():
			differ++
		}
	}
	return differ, errors
}

// Run runs every cell, one after the other; when ctx ends, the cells left
// are marked not run. It never fails: a cell that cannot run is an Error
// cell, and so is every cell of options Validate refuses (check them
// first to tell).
func Run(ctx context.Context, o Options) *Result {
	invalid := o.Validate()
	o.Seed = harness.Seed(o.Seed)
	if o.Duration == 0 && o.Quick {
		o.Duration = 2 * time.Second
	}
	r := &Result{Seed: o.Seed, Quick: o.Quick, Cells: Cells(o.Quick, o.Backends, o.Servers)}
	if len(o.Faults) > 0 {
		r.Cells = slices.DeleteFunc(r.Cells, func(c *Cell) bool { return !slices.Contains(o.Faults, c.Fault) })
	}
	if invalid != nil {
		for _, c := range r.Cells {
			c.Observed, c.Note = Error, invalid.Error()
		}
		return r
	}
	for i, c := range r.Cells {
		if ctx.Err() != nil {
			c.Observed, c.Note = NotRun, "interrupted"
			continue
		}
		o.runCell(ctx, c)
		if o.Done != nil {
			o.Done(i, len(r.Cells), c)
		}
	}
	return r
}

// spec returns the harness spec of cell c.
func (o *Options) spec(c *Cell) harness.Spec {
	sink, noRecovery := c.Config.sink()
	sp := harness.Spec{
		Engine: o.Engine, Backend: c.Backend, ScenarioName: c.scenario, Sink: sink, NoRecovery: noRecovery,
		Overrides: harness.Overrides{Seed: o.Seed, Duration: o.Duration}, CheckTimeout: o.CheckTimeout,
	}
	if c.workers > 0 && (c.duration > 0 && o.Duration == 0 || c.duration > o.Duration) {
		sp.Overrides.Duration = c.duration
	}
	switch c.Backend {
	case harness.Redis:
		sp.URL = orServer(o.RedisURL, o.Servers.RedisNone)
	case harness.Postgres:
		sp.URL = orServer(o.PostgresURL, o.Servers.Postgres)
	case harness.DynamoDB:
		sp.URL = o.DynamoURL
	}
	return sp
}

func orServer(url string, s interface{ URL() string }) string {
	if url == "" && s != nil {
		return s.URL()
	}
	return url
}

// runCell runs one cell and fills in what it observed.
func (o *Options) runCell(ctx context.Context, c *Cell) {
	t0 := time.Now()
	defer func() { c.Seconds = time.Since(t0).Round(10 * time.Millisecond).Seconds() }()
	c.Seed = o.Seed
	if isBroker(c.Backend) {
		o.runBrokerCell(ctx, c)
		return
	}
	sp := o.spec(c)
	sc, err := scenarios.Load(c.scenario)
	if err != nil {
		c.Observed, c.Note = Error, err.Error()
		return
	}
	sp.Scenario = sc
	if c.faults != nil {
		d := sp.Overrides.Duration
		if d == 0 {
			d = sc.Duration
		}
		sp.Faults = c.faults(d)
	}
	if c.failover != "" {
		plan, stop, err := startFailover(ctx, c)
		defer stop()
		if err != nil {
			c.Observed, c.Note = Error, err.Error()
			return
		}
		sp.Faults = plan
	}
	var out *harness.Outcome
	if c.workers > 0 {
		out, err = multiproc.Run(ctx, sp, c.workers, o.Workers)
	} else {
		out, err = harness.Run(ctx, sp)
	}
	if err != nil {
		c.Observed, c.Note = Error, err.Error()
		if ctx.Err() != nil {
			c.Observed, c.Note = NotRun, "interrupted"
		}
		return
	}
	c.observe(out)
}

// observe fills in the cell from its run's outcome.
func (c *Cell) observe(out *harness.Outcome) {
	c.Replay = out.Replay
	c.Faults, c.Unknown = out.Summary.Counts.Faults, out.Summary.Outcomes["unknown"]
	c.judge(out.Report, "the fault did not hit the effect-to-completion window this run")
}

// judge fills in the verdict of a cell from its checker report; missed is
// the note of an unsafe cell whose narrow window this run did not hit.
func (c *Cell) judge(rep checker.Report, missed string) {
	switch rep.Verdict {
	case checker.VerdictOK:
		c.Observed = Safe
	case checker.VerdictViolation:
		c.Observed = Unsafe
	default:
		c.Observed = Inconclusive
	}
	for _, ir := range rep.Invariants {
		if ir.Violations > 0 {
			c.Violations += ir.Violations
			c.Invariants = append(c.Invariants, fmt.Sprintf("%s×%d", ir.Invariant, ir.Violations))
		}
	}
	c.Match = c.Observed == c.Expected
	switch {
	case !c.Match && c.ByChance && c.Observed == Safe:
		c.Missed, c.Note = true, missed
	case !c.Match:
		c.Note = fmt.Sprintf("(%s)", strings.Join(c.Invariants, " "))
	}
}

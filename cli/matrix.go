package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/matrix"
)

// matrixCmd is `idembench matrix`: the safety matrix of VERIFICATION.md,
// run cell by cell, observed next to expected.
type matrixCmd struct {
	Quick        bool          `help:"Reduced matrix for CI (memory plus the server cells that matter, short runs; about a minute)."`
	Backends     []string      `help:"Backends to run: memory, redis, postgres; rabbitmq and nats add the consumer rows on that broker." default:"memory,redis,postgres" enum:"memory,redis,postgres,rabbitmq,nats"`
	Engine       string        `help:"Engine of every cell; the tx cells need its transactional mode (this binary: ${engines})." default:"idem" placeholder:"NAME"`
	Seed         int64         `help:"Seed of every cell; 0 picks a fresh one (printed)."`
	Duration     time.Duration `help:"Traffic phase of each cell (default: the scenario's; 2s with --quick)."`
	Out          string        `help:"Write matrix.md and matrix.json to this directory." placeholder:"DIR"`
	RedisURL     string        `help:"Redis for the cells without a restart (default: a private server)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL  string        `help:"PostgreSQL for the cells without a restart (default: a private server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	CheckTimeout time.Duration `help:"Linearizability budget of each cell's check." default:"30s"`
	AMQPURL      string        `help:"RabbitMQ of the rabbitmq cells (default: $IDEM_AMQP_URL or amqp://guest:guest@127.0.0.1:5672/)." name:"amqp-url" placeholder:"URL"`
	NATSURL      string        `help:"NATS JetStream of the nats cells (default: $IDEM_NATS_URL or nats://127.0.0.1:4222)." name:"nats-url" placeholder:"URL"`
	Faults       []string      `help:"Run only the cells of these fault columns: crash, pause, dup, net, restart, failover (default: every column)." enum:"crash,pause,dup,net,restart,failover" placeholder:"FAULT"`
}

// matrixFaults maps the --faults names to the matrix's columns.
var matrixFaults = map[string]matrix.Fault{"crash": matrix.Crash, "pause": matrix.Pause, "dup": matrix.Dup,
	"net": matrix.Net, "restart": matrix.Restart, "failover": matrix.Failover}

func (c *matrixCmd) Run(ctx context.Context, std stdio, reg *harness.Registry) error {
	eng, err := reg.Lookup(c.Engine)
	if err != nil {
		return usage("--engine: %v", err)
	}
	o := matrix.Options{Engine: eng, Quick: c.Quick, Seed: c.Seed, Duration: c.Duration,
		RedisURL: c.RedisURL, PostgresURL: c.PostgresURL, CheckTimeout: c.CheckTimeout}
	for _, b := range c.Backends {
		o.Backends = append(o.Backends, harness.Backend(b))
	}
	o.AMQPURL, o.NATSURL = c.AMQPURL, c.NATSURL
	if o.AMQPURL == "" {
		o.AMQPURL = envOr("IDEM_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	}
	if o.NATSURL == "" {
		o.NATSURL = envOr("IDEM_NATS_URL", "nats://127.0.0.1:4222")
	}
	if exe, err := os.Executable(); err == nil {
		o.ConsumeWorker = func() *exec.Cmd { return exec.Command(exe, "consume-worker") }
	}
	for _, f := range c.Faults {
		o.Faults = append(o.Faults, matrixFaults[f])
	}
	o.Seed = harness.Seed(o.Seed)
	quick := map[bool]string{true: " · quick", false: ""}[c.Quick]
	fmt.Fprintf(std.out, "idembench matrix: seed %d%s\n", o.Seed, quick)
	var stop func()
	o.Servers, stop, err = matrix.StartServers(ctx, o.Backends)
	defer stop()
	if err != nil {
		return harness.EnvironmentError(err)
	}
	o.Done = func(i, n int, cell *matrix.Cell) {
		fmt.Fprintf(std.out, "[%2d/%d] %-24s %-8s %-21s %-9s expected %-6s observed %-12s %s\n", i+1, n,
			cell.Config, cell.Backend, cell.Fault, short(cell.Variant), cell.Expected, cell.Observed, cellNote(cell))
	}
	start := time.Now()
	r := matrix.Run(ctx, o)
	fmt.Fprintln(std.out)
	matrix.WriteText(std.out, r.Cells)
	fmt.Fprintf(std.out, "seed: %d · %d cells in %s\n", r.Seed, len(r.Cells), time.Since(start).Round(time.Second))
	if c.Out != "" {
		if err := matrix.WriteFiles(c.Out, r); err != nil {
			return usage("--out: %v", err)
		}
		fmt.Fprintf(std.out, "written: %s, %s\n", filepath.Join(c.Out, matrix.MarkdownFile), filepath.Join(c.Out, matrix.JSONFile))
	}
	differ, errs := r.Differ()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case differ > 0:
		return codeError(exitViolation, fmt.Sprintf("%d cells differ from the expected matrix", differ))
	case errs > 0:
		return harness.EnvironmentError(fmt.Errorf("%d cells could not run", errs))
	}
	return nil
}

func short(v string) string {
	return map[string]string{matrix.RedisNone: "no-pers", matrix.RedisAOF: "aof", matrix.Processes: "procs",
		matrix.BatchProcesses: "batch", "redis-sentinel": "sentinel", "redis-wait": "wait 1", "redis-cluster": "cluster", "postgres-async": "pg async", "postgres-sync": "pg sync"}[v]
}

// cellNote is the status of a cell after its run, with its note.
func cellNote(c *matrix.Cell) string {
	switch c.Status() {
	case "-":
		return "(not run: " + c.Note + ")"
	case "yes":
		return "ok"
	case "missed":
		return "missed: " + c.Note
	}
	return "DIFFERS " + c.Note
}

// Help is the detailed help of `idembench matrix --help`, with examples.
func (c *matrixCmd) Help() string {
	return `Runs the safety matrix of VERIFICATION.md: every engine configuration
(plain or fenced sink, recovery on or off, transactional mode) against every
fault (pauses, crashes, restarts, network faults) on each backend, and
prints each cell's observed verdict next to the expected one. A safe
configuration that shows a double execution, or an unsafe one that is not
caught, is a cell that differs (exit 1). Redis and PostgreSQL cells run on
private servers started from the installed binaries unless a URL is given.

Examples:

    idembench matrix --quick                        # CI: about a minute
    idembench matrix --backends memory --seed 7     # memory cells only, fixed seed
    idembench matrix --out matrix-out               # also writes matrix.md and matrix.json
    idembench matrix --faults pause --seed 3        # the pause column only
    idembench matrix --engine naive/check-then-act  # a known-bad engine: cells differ
    idembench matrix --backends rabbitmq,nats       # the consumer rows on both brokers

The rabbitmq and nats backends are the consumer rows (idembench consume):
the reference configurations, a consumer with no idempotency check and a
naive store, under a crash after the effect and before the ack (in process
and SIGKILL of a worker process) and under publisher duplicates, on the
brokers at --amqp-url and --nats-url.

Exit codes: 0 every cell as expected, 1 a cell differs, 2 usage error,
5 a cell could not run (server missing), 130 interrupted.`
}

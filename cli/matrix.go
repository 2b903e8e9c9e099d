package cli

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/matrix"
)

// matrixCmd is `idembench matrix`: the safety matrix of docs/design/verification.md,
// run cell by cell, observed next to expected.
type matrixCmd struct {
	Quick        bool          `help:"Reduced matrix for CI (memory plus the server cells that matter, short runs; about a minute)."`
	Backends     []string      `help:"Backends to run: memory, redis, postgres; rabbitmq and nats add the consumer rows on that broker." default:"memory,redis,postgres" enum:"memory,redis,postgres,rabbitmq,nats"`
	Engine       string        `help:"Engine of every cell; the tx cells need its transactional mode (this binary: ${engines})." default:"idem" placeholder:"NAME"`
	Seed         int64         `help:"Seed of every cell: 0 to 2^53-1; 0 picks a fresh one (printed)."`
	Duration     time.Duration `help:"Traffic phase of each cell: 0 (the scenario's; 2s with --quick) or 100ms to 1h."`
	Out          string        `help:"Write matrix.md and matrix.json to this directory: missing, empty, or an earlier idembench output, which is replaced." placeholder:"DIR"`
	RedisURL     string        `help:"Redis for the cells without a restart (default: a private server)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL  string        `help:"PostgreSQL for the cells without a restart (default: a private server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	CheckTimeout time.Duration `help:"Linearizability budget of each cell's check: above 0 and at most 1h." default:"30s"`
	AMQPURL      string        `help:"RabbitMQ of the rabbitmq cells (default: $IDEM_AMQP_URL or amqp://guest:guest@127.0.0.1:5672/)." name:"amqp-url" placeholder:"URL"`
	NATSURL      string        `help:"NATS JetStream of the nats cells (default: $IDEM_NATS_URL or nats://127.0.0.1:4222)." name:"nats-url" placeholder:"URL"`
	Faults       []string      `help:"Run only the cells of these fault columns: crash, pause, dup, net, restart, failover (default: every column)." enum:"crash,pause,dup,net,restart,failover" placeholder:"FAULT"`
}

// matrixFaults maps the --faults names to the matrix's columns.
var matrixFaults = map[string]matrix.Fault{"crash": matrix.Crash, "pause": matrix.Pause, "dup": matrix.Dup,
	"net": matrix.Net, "restart": matrix.Restart, "failover": matrix.Failover}

// options checks every flag, without starting or writing anything, and
// returns the matrix's options (without Servers and Done).
func (c *matrixCmd) options(reg *harness.Registry) (matrix.Options, error) {
	eng, err := reg.Lookup(c.Engine)
	if err != nil {
		return matrix.Options{}, usage("--engine: %v", err)
	}
	o := matrix.Options{Engine: eng, Quick: c.Quick, Seed: c.Seed, Duration: c.Duration,
		RedisURL: c.RedisURL, PostgresURL: c.PostgresURL, CheckTimeout: c.CheckTimeout}
	for _, b := range c.Backends {
		o.Backends = append(o.Backends, harness.Backend(b))
	}
	for _, f := range c.Faults {
		o.Faults = append(o.Faults, matrixFaults[f])
	}
	switch {
	case c.Seed < 0 || c.Seed > harness.MaxSeed:
		return o, usage("--seed %d: want 0 to %d (2^53-1; 0 picks one)", c.Seed, int64(harness.MaxSeed))
	case c.Duration < 0 || c.Duration > 0 && (c.Duration < matrix.MinDuration || c.Duration > matrix.MaxDuration):
		return o, usage("--duration %s: want 0 (the scenario's) or %s to %s", c.Duration, matrix.MinDuration, matrix.MaxDuration)
	case c.CheckTimeout <= 0 || c.CheckTimeout > matrix.MaxCheckTimeout:
		return o, usage("--check-timeout %s: want above 0 and at most %s", c.CheckTimeout, matrix.MaxCheckTimeout)
	}
	o.AMQPURL, o.NATSURL = c.AMQPURL, c.NATSURL
	if o.AMQPURL == "" {
		o.AMQPURL = envOr("IDEM_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
	}
	if o.NATSURL == "" {
		o.NATSURL = envOr("IDEM_NATS_URL", "nats://127.0.0.1:4222")
	}
	for _, u := range []struct {
		backend, flag, url string
		schemes            []string
	}{
		{"redis", "--redis-url", c.RedisURL, []string{"redis", "rediss", "unix"}},
		{"postgres", "--postgres-url", c.PostgresURL, nil},
		{"rabbitmq", "--amqp-url", o.AMQPURL, []string{"amqp", "amqps"}},
		{"nats", "--nats-url", o.NATSURL, []string{"nats", "tls", "ws", "wss"}},
	} {
		if slices.Contains(c.Backends, u.backend) && u.url != "" {
			if err := checkURL(u.flag, u.url, u.schemes); err != nil {
				return o, err
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		o.ConsumeWorker = func() *exec.Cmd { return exec.Command(exe, "worker") }
	}
	if err := o.Validate(); err != nil {
		return o, usage("%v", err)
	}
	return o, nil
}

// checkURL checks that u parses as a URL with one of schemes (any scheme
// when schemes is empty; PostgreSQL also takes key=value strings, which
// are left to the driver).
func checkURL(flag, u string, schemes []string) error {
	if len(schemes) == 0 {
		return nil
	}
	pu, err := neturl.Parse(u)
	if err != nil {
		return usage("%s: %v", flag, err)
	}
	if !slices.Contains(schemes, pu.Scheme) {
		return usage("%s %s: want a %s:// URL", flag, harness.RedactURL(u), strings.Join(schemes, ":// or "))
	}
	return nil
}

func (c *matrixCmd) Run(ctx context.Context, std stdio, g *globals, reg *harness.Registry) error {
	o, err := c.options(reg)
	if err != nil {
		return err
	}
	od, err := newOutDir(c.Out)
	if err != nil {
		return err
	}
	text := textOut(std, g)
	o.Seed = harness.Seed(o.Seed)
	quick := map[bool]string{true: " · quick", false: ""}[c.Quick]
	fmt.Fprintf(text, "idembench matrix: seed %d%s\n", o.Seed, quick)
	var stop func()
	o.Servers, stop, err = matrix.StartServers(ctx, o.Backends)
	defer stop()
	if err != nil {
		if ctx.Err() != nil {
			return interrupted("")
		}
		return harness.EnvironmentError(err)
	}
	// done holds the cells run so far, for the partial matrix an
	// interrupt writes while the cell under way is left to finish.
	var mu sync.Mutex
	var done []matrix.Cell
	o.Done = func(i, n int, cell *matrix.Cell) {
		fmt.Fprintf(text, "[%2d/%d] %-24s %-8s %-21s %-9s expected %-6s observed %-12s %s\n", i+1, n,
			cell.Config, cell.Backend, cell.Fault, short(cell.Variant), cell.Expected, cell.Observed, cellNote(cell))
		mu.Lock()
		done = append(done, *cell)
		mu.Unlock()
	}
	start := time.Now()
	r, _ := untilInterrupted(ctx, func() (*matrix.Result, error) { return matrix.Run(ctx, o), nil })
	if ctx.Err() != nil {
		mu.Lock()
		r = &matrix.Result{Seed: o.Seed, Quick: o.Quick}
		for i := range done {
			r.Cells = append(r.Cells, &done[i])
		}
		mu.Unlock()
	}
	fmt.Fprintln(text)
	matrix.WriteText(text, r.Cells)
	fmt.Fprintf(text, "seed: %d · %d cells in %s\n", r.Seed, len(r.Cells), time.Since(start).Round(time.Second))
	if od.final != "" {
		if err := matrix.WriteFiles(od.runPath(), r); err != nil {
			od.discard()
			return usage("--out %s: %v", od.final, err)
		}
		if err := od.commit(); err != nil {
			return err
		}
		fmt.Fprintf(text, "written: %s, %s\n", filepath.Join(od.final, matrix.MarkdownFile), filepath.Join(od.final, matrix.JSONFile))
	}
	if g.JSON {
		if err := writeJSON(std.out, r); err != nil {
			return err
		}
	}
	differ, errs := r.Differ()
	switch {
	case ctx.Err() != nil:
		return interrupted(od.final)
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
	return `Runs the safety matrix of docs/design/verification.md: every engine configuration
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
    idembench matrix --engine naive/check-then-act  # a known-bad engine: cells differ

The rabbitmq and nats backends are the consumer rows (idembench consume):
the reference configurations, a consumer with no idempotency check and a
naive store, under a crash after the effect and before the ack (in process
and SIGKILL of a worker process) and under publisher duplicates, on the
brokers at --amqp-url and --nats-url.

Every flag is checked before any server starts. --json prints matrix.json
on stdout (the table then goes to stderr). On SIGINT or SIGTERM the cells
run so far are printed and written to --out (the others are left out),
within 2 s.

Exit codes: 0 every cell as expected, 1 a cell differs, 2 usage error,
5 a cell could not run (server missing), 130 interrupted.`
}

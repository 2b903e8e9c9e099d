package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/idembench/idembench/consume"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/reports"
)

// consumeCmd is `idembench consume`: consumers on a real broker, checked
// like a run.
type consumeCmd struct {
	Broker         string        `help:"Broker: rabbitmq or nats." default:"rabbitmq" enum:"rabbitmq,nats"`
	URL            string        `help:"Broker URL (default: $IDEM_AMQP_URL or amqp://guest:guest@127.0.0.1:5672/ for rabbitmq, $IDEM_NATS_URL or nats://127.0.0.1:4222 for nats)." placeholder:"URL"`
	Engine         string        `help:"Engine whose store the consumers use (this binary: ${engines})." default:"idem" placeholder:"NAME"`
	Backend        string        `help:"Store backend: memory, redis or postgres." default:"memory" enum:"memory,redis,postgres"`
	RedisURL       string        `help:"Redis URL for --backend redis (default: $IDEM_REDIS_URL, else redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL    string        `help:"PostgreSQL URL for --backend postgres (default: $IDEM_POSTGRES_URL, else the docker-compose.yml server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	BrokerOnly     bool          `help:"Consume with no idempotency check: every delivery applies its effect and is acked (the broker alone; expected to fail)."`
	Sink           string        `help:"Effect sink: fenced or plain." default:"fenced" enum:"fenced,plain"`
	Recovery       bool          `help:"Install the engine's recovery hook (fenced sink)." default:"true" negatable:""`
	Messages       int           `help:"Distinct messages to publish: 1 to 100000." default:"200"`
	DuplicateRate  float64       `help:"Share of messages the publisher publishes twice (a publisher retry): 0 to 1." default:"0.2"`
	Consumers      int           `help:"Concurrent consumers: 1 to 256 (1 to 64 with --processes)." default:"4"`
	Batch          int           `help:"Pull up to N messages at a time and claim them in one round trip (Engine.ConsumeBatch): 0 to 500; 0 or 1: message by message."`
	BatchLinger    time.Duration `help:"How long a batch waits to fill: 0 to 1s (0: 20ms)." placeholder:"DURATION"`
	Latency        time.Duration `help:"How long the business handler works before its effect: above 0, at most 1m (it stops when the run ends)." default:"2ms"`
	CrashBeforeAck int           `help:"Consumers killed after a message's effect and before its ack (aimed): 0 to 1000." default:"3"`
	Pause          int           `help:"Consumers stopped right before an effect, past their lease and the ack wait: 0 to 100."`
	Overlap        int           `help:"Messages published twice whose first copy waits after its claim, before its effect, until the other copy was claimed (at most half the lease), a duplicate aimed at a message in flight: 0 to 1000."`
	Restarts       int           `help:"Consumer restarts during the run: 0 to 100, and at most --consumers without --processes (an in-process consumer restarts once)."`
	ServerRestart  bool          `help:"NATS only: run a private nats-server with file storage and restart it mid-run."`
	Processes      bool          `help:"Run each consumer in a worker process: crashes are SIGKILLs, pauses SIGSTOPs, restarts SIGTERMs."`
	Seed           int64         `help:"Seed of duplicates, poison messages and fault targets: 0 to 2^53-1; 0 picks one (printed)."`
	Timeout        time.Duration `help:"Bound of the run from the first publish: above 0, at most 24h." default:"60s"`
	Out            string        `help:"Run directory: missing, empty or a previous run, which is replaced (default: ./idembench-out/consume-<timestamp>)." placeholder:"DIR"`
	NoSave         bool          `help:"Do not write the run directory (not with --out)." name:"no-save"`
}

// defaultLatency is the default of --latency, left out of the replay line.
const defaultLatency = 2 * time.Millisecond

// Help is the detailed help of `idembench consume --help`.
func (c *consumeCmd) Help() string {
	return `Publishes --messages messages (some twice) to a fresh RabbitMQ queue or
NATS JetStream stream, consumes them with --consumers consumers under aimed
faults, checks that every message had its effect at most once, prints the
verdict and writes the run directory (history.jsonl, consume.json,
summary.json, report.md, report.html). The run's queues or streams are
removed at its end, also on Ctrl-C.

Every numeric flag has the bound its help gives; --crash-before-ack,
--pause and --overlap need as many distinct messages. A value out of range
is refused (exit 2) before anything connects. A broker that dies during the
run exits 5 naming the connection; a run that does not drain within
--timeout exits 4; Ctrl-C (SIGINT or SIGTERM) ends it within 2 s, removes
its queues or streams and writes the history so far (exit 130).

Examples:

    idembench consume                                   # RabbitMQ, reference engine: ok
    idembench consume --broker nats --broker-only       # the broker alone: caught, exit 1
    idembench consume --processes --consumers 3 --pause 2
    idembench consume --json --no-save | jq .verdict

` + exitCodesHelp
}

func (c *consumeCmd) Run(ctx context.Context, g *globals, std stdio, reg *harness.Registry) error {
	if err := c.checkFlags(); err != nil {
		return err
	}
	cfg := consume.Config{
		Broker: c.Broker, URL: c.brokerURL(), BrokerOnly: c.BrokerOnly, Sink: c.Sink, Recovery: c.Recovery && c.Sink == "fenced",
		Messages: c.Messages, DuplicateRate: c.duplicateRate(), Consumers: c.Consumers, Batch: c.Batch, BatchLinger: c.BatchLinger, Latency: c.Latency, Processes: c.Processes, Seed: harness.Seed(c.Seed), Timeout: c.Timeout,
		Faults: consume.Faults{CrashBeforeAck: c.CrashBeforeAck, Pause: c.Pause, Overlap: c.Overlap, Restarts: c.Restarts, ServerRestart: c.ServerRestart},
	}
	if c.Processes {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("%w: %v", harness.ErrEnvironment, err)
		}
		cfg.WorkerCommand = func() *exec.Cmd { return exec.Command(exe, "worker") }
	}
	if err := cfg.Validate(); err != nil {
		return usage("%v", err)
	}
	out, err := c.outDir()
	if err != nil {
		return err
	}
	if !c.BrokerOnly {
		closer, err := c.openStore(ctx, reg, &cfg)
		if err != nil {
			out.discard()
			return err
		}
		if closer != nil {
			defer closer.Close()
		}
	}
	replay := fmt.Sprintf("%s consume --broker %s --seed %d%s", invokedAs(), c.Broker, cfg.Seed, c.replayFlags())
	opts := reports.Options{ReplayCommand: replay}
	res, runErr := untilInterrupted(ctx, func() (*consume.Result, error) { return consume.Run(ctx, cfg) })
	if ctx.Err() != nil {
		return saveInterrupted(out, res, opts)
	}
	if noVerdict(runErr) {
		out.discard()
		return runError(runErr)
	}
	text := textOut(std, g)
	if werr := consume.WriteSummary(text, res); werr != nil {
		out.discard()
		return werr
	}
	if errors.Is(runErr, consume.ErrNotDrained) {
		fmt.Fprintln(text, "not drained (exit 4 unless the verdict is worse):", runErr)
	}
	var sum *reports.Summary
	if dir := out.runPath(); dir != "" {
		if sum, err = consume.WriteReport(dir, res, opts); err != nil {
			out.discard()
			return err
		}
		if err := out.commit(); err != nil {
			return err
		}
		fmt.Fprintln(text, "run directory:", out.final)
	} else if g.JSON {
		sum = reports.NewSummary(reports.Measure(res.History, opts.MeasureOptions), &res.Report, opts)
	}
	fmt.Fprintln(text, "replay:", replay)
	if err := writeSummaryJSON(std, g, sum); err != nil {
		return err
	}
	// The verdict first, as in run: a violation found before the timeout
	// outranks the missed drain (exit 4).
	if err := verdictError(res.Report.Verdict); err != nil {
		return err
	}
	return runErr
}

// checkFlags checks every numeric flag against the bound its help gives
// (consume's limits, harness.MaxSeed), naming the flag and the bound, and
// that --out and --no-save are not both given.
func (c *consumeCmd) checkFlags() error {
	consumers, consumersWant := consume.MaxConsumers, fmt.Sprintf("1 to %d (%d with --processes)", consume.MaxConsumers, consume.MaxProcesses)
	if c.Processes {
		consumers, consumersWant = consume.MaxProcesses, fmt.Sprintf("1 to %d with --processes (one worker process each)", consume.MaxProcesses)
	}
	restarts, restartsWant := consume.MaxRestarts, fmt.Sprintf("0 to %d", consume.MaxRestarts)
	if !c.Processes && c.Consumers < restarts {
		restarts, restartsWant = c.Consumers, fmt.Sprintf("0 to --consumers (%d) without --processes: an in-process consumer restarts once", c.Consumers)
	}
	counts := []struct {
		flag      string
		v, lo, hi int
		want      string
	}{
		{"--messages", c.Messages, 1, consume.MaxMessages, ""},
		{"--consumers", c.Consumers, 1, consumers, consumersWant},
		{"--batch", c.Batch, 0, consume.MaxBatch, ""},
		{"--crash-before-ack", c.CrashBeforeAck, 0, consume.MaxCrashes, ""},
		{"--pause", c.Pause, 0, consume.MaxPauses, ""},
		{"--overlap", c.Overlap, 0, consume.MaxOverlaps, ""},
		{"--restarts", c.Restarts, 0, restarts, restartsWant},
	}
	for _, f := range counts {
		if f.v < f.lo || f.v > f.hi {
			if f.want == "" {
				f.want = fmt.Sprintf("%d to %d", f.lo, f.hi)
			}
			return usage("%s %d: want %s", f.flag, f.v, f.want)
		}
	}
	durations := []struct {
		flag   string
		v, max time.Duration
		zeroOK bool
	}{
		{"--batch-linger", c.BatchLinger, consume.MaxBatchLinger, true},
		{"--latency", c.Latency, consume.MaxLatency, false},
		{"--timeout", c.Timeout, consume.MaxTimeout, false},
	}
	for _, f := range durations {
		switch {
		case f.zeroOK && (f.v < 0 || f.v > f.max):
			return usage("%s %s: want 0 to %s", f.flag, f.v, shortDuration(f.max))
		case !f.zeroOK && (f.v <= 0 || f.v > f.max):
			return usage("%s %s: want above 0 and at most %s", f.flag, f.v, shortDuration(f.max))
		}
	}
	switch {
	case !(c.DuplicateRate >= 0 && c.DuplicateRate <= 1): // NaN too
		return usage("--duplicate-rate %g: want 0 to 1", c.DuplicateRate)
	case c.Seed < 0 || c.Seed > harness.MaxSeed:
		return usage("--seed %d: want 0 to %d (2^53-1; 0 picks one)", c.Seed, int64(harness.MaxSeed))
	case c.NoSave && c.Out != "":
		return usage("--out and --no-save do not go together")
	}
	return nil
}

// shortDuration prints d without its zero minutes and seconds: 1h, 1m,
// 24h.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// outDir checks --out as `idembench run` does, through newOutDir: it may
// be missing, empty or a previous run, which this run replaces; anything
// else, or a place that cannot be written, is refused before any work.
func (c *consumeCmd) outDir() (*outDir, error) {
	dir := ""
	if !c.NoSave {
		dir = c.Out
		if dir == "" {
			dir = filepath.Join("idembench-out", "consume-"+time.Now().Format("20060102-150405.000"))
		}
	}
	return newOutDir(dir)
}

// saveInterrupted writes what a run cut short by SIGINT or SIGTERM has
// (the history so far; the whole report if the run had finished) and
// returns the one line run prints: what the run directory holds.
func saveInterrupted(out *outDir, res *consume.Result, opts reports.Options) error {
	dir := out.runPath()
	switch {
	case dir == "":
		return interrupted("") // --no-save
	case res == nil || res.History == nil:
		out.discard()
		// The removed directory holds nothing: "nothing written", whatever
		// a previous run left in --out.
		return interrupted(dir)
	}
	var err error
	if res.Report.Verdict != "" {
		_, err = consume.WriteReport(dir, res, opts)
	} else {
		err = consume.WriteHistory(dir, res)
	}
	if err == nil {
		err = out.commit()
	}
	if err != nil {
		out.discard()
		return fmt.Errorf("%w: %v", errInterrupted, err)
	}
	return interrupted(out.final)
}

// duplicateRate is --duplicate-rate for consume.Config, where 0 means the
// default and a negative rate none.
func (c *consumeCmd) duplicateRate() float64 {
	if c.DuplicateRate <= 0 {
		return -1
	}
	return c.DuplicateRate
}

// brokerURL returns --url or the broker's default.
func (c *consumeCmd) brokerURL() string {
	if c.URL != "" {
		return c.URL
	}
	if c.Broker == consume.NATS {
		return envOr("IDEM_NATS_URL", "nats://127.0.0.1:4222")
	}
	return envOr("IDEM_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
}

// openStore opens --engine on --backend for the consumers' store.
func (c *consumeCmd) openStore(ctx context.Context, reg *harness.Registry, cfg *consume.Config) (io.Closer, error) {
	eng, err := reg.Lookup(c.Engine)
	if err != nil {
		return nil, err
	}
	b, err := harness.ParseBackend(c.Backend)
	if err != nil {
		return nil, err
	}
	if !eng.Supports(b) {
		return nil, usage("--engine %s does not run on --backend %s", c.Engine, c.Backend)
	}
	u := resolveBackendURL(c.Backend, c.RedisURL, c.PostgresURL)
	env := harness.Env{Backend: b, URL: u.url, Warn: func(string) {}}
	if b.Persistent() {
		env.Prefix = fmt.Sprintf("consume%d", time.Now().UnixNano())
	}
	st, closer, err := eng.Open(ctx, env)
	if err != nil {
		if errors.Is(err, harness.ErrConfig) {
			return nil, err
		}
		return nil, withBackendHint(fmt.Errorf("%w: %v", harness.ErrEnvironment, err), c.Backend, u)
	}
	cfg.Store, cfg.StoreName = st, c.Engine+"/"+c.Backend
	return closer, nil
}

// replayFlags repeats the flags that shape the run.
func (c *consumeCmd) replayFlags() string {
	s := fmt.Sprintf(" --messages %d --duplicate-rate %g --consumers %d --crash-before-ack %d --pause %d --restarts %d --sink %s",
		c.Messages, max(c.DuplicateRate, 0), c.Consumers, c.CrashBeforeAck, c.Pause, c.Restarts, c.Sink)
	if !c.Recovery || c.Sink != "fenced" {
		s += " --no-recovery"
	}
	if c.Overlap > 0 {
		s += fmt.Sprintf(" --overlap %d", c.Overlap)
	}
	if c.Batch > 1 {
		s += fmt.Sprintf(" --batch %d", c.Batch)
		if c.BatchLinger > 0 {
			s += " --batch-linger " + c.BatchLinger.String()
		}
	}
	if c.Latency != defaultLatency {
		s += " --latency " + c.Latency.String()
	}
	for _, f := range []struct {
		flag string
		on   bool
	}{{" --broker-only", c.BrokerOnly}, {" --server-restart", c.ServerRestart}, {" --processes", c.Processes}} {
		if f.on {
			s += f.flag
		}
	}
	if c.Engine != "idem" || c.Backend != "memory" {
		s += " --engine " + c.Engine + " --backend " + c.Backend
	}
	return s
}

// envOr returns the environment variable name, or def when it is empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Package multiproc runs the clients of one harness run in several worker
// processes that drive the backend with the same keys, so that a key's
// holder and its successor are in different processes. The scenario's
// crashes become real SIGKILLs (the worker kills itself at the crash point
// after sending its history; the coordinator starts a new incarnation),
// its pauses SIGSTOP/SIGCONT of a whole worker process (heartbeat
// goroutines stop too), aimed: the worker asks the coordinator to stop it
// right after an effect, before its completion (pause.go). Effects go to a
// sink whose ledger lives in the backend (workload/redissink,
// workload/pgsink, or the engine's transactional sink). Each incarnation
// sends the coordinator its history; the coordinator merges them, adds the
// effects whose acknowledgement died with a worker from the backend
// ledger, and checks the whole with the harness.
//
// Workers that join through NATS JetStream (Join: processes on other
// hosts) inject their crashes and pauses in their engines instead
// (joinfaults.go), and, with keys sharded by host, may run on the memory
// backend: each owns a memory store and ledger and sends its ledger with
// its history (memledger.go).
//
// Coordinator and workers speak one protocol (conn.go: a hello with the
// spec, then calls both ways and events), over a worker's stdin and stdout
// today; package consume's worker processes speak it too. The worker
// processes of Run run a program that calls Worker (the idembench CLI's
// hidden "worker" subcommand does).
package multiproc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/workload"
)

// Options configure Run. The zero value runs this program's "worker"
// subcommand.
type Options struct {
	// Command returns the command that runs one worker process, which
	// must call Worker with Stdio. Nil means this executable with the
	// argument "worker". Run sets its Stdin, Stdout and Stderr.
	Command func() (*exec.Cmd, error)
	// ClockSkew, when set, gives worker i a clock off by ClockSkew(i): a
	// host of its own, for tests of the clock handling. Each worker
	// measures its offset to the coordinator's clock before its traffic
	// and corrects its readings by it; the history's header keeps each
	// worker's remaining error bound, which the checker widens its ops'
	// intervals by.
	ClockSkew func(worker int) time.Duration
	// Join, when set, makes the workers processes started elsewhere that
	// join the run through NATS JetStream (see Join) instead of
	// processes Run starts with Command.
	Join *Join
}

func (o Options) command() (*exec.Cmd, error) {
	if o.Command != nil {
		return o.Command()
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, "worker"), nil
}

// workerSpec is what the coordinator tells one worker process (one
// incarnation of worker Index) to do.
type workerSpec struct {
	Engine   string            `json:"engine"`
	Backend  harness.Backend   `json:"backend"`
	URL      string            `json:"url,omitempty"`
	SinkURL  string            `json:"sink_url,omitempty"`
	Sink     string            `json:"sink"`
	Recovery bool              `json:"recovery"`
	Scenario string            `json:"scenario"`
	Over     harness.Overrides `json:"overrides"`
	// ClientBase offsets the worker's client ids; Prefix is the run's.
	ClientBase int    `json:"client_base"`
	Prefix     string `json:"prefix"`
	// Crash, when set, is the crash fault of this incarnation.
	Crash *chaos.Fault `json:"crash,omitempty"`
	// Pauses, when any, are this incarnation's aimed pauses (pause.go).
	Pauses []aimedPause `json:"pauses,omitempty"`
	// Faults, for a worker that joined (no SIGKILL or SIGSTOP reaches
	// it), are its share of the scenario's crashes and pauses, injected
	// in its engine as a one-process run does (joinfaults.go).
	Faults []chaos.Fault `json:"faults,omitempty"`
	Index  int           `json:"index"`
	// ClientTimeout, when positive, replaces the scenario's client timeout
	// (a run with network faults).
	ClientTimeout time.Duration `json:"client_timeout,omitempty"`
	// ClockSkew is added to the worker's clock readings, as if it ran on
	// a host whose clock is off by that much (Options.ClockSkew).
	ClockSkew time.Duration `json:"clock_skew,omitempty"`
}

// probeClients is the room left after each worker incarnation's client
// ids for the clients of its liveness probe.
const probeClients = 64

// MaxWorkers bounds the worker processes of one run: each is a whole
// process with its own connection pools, and a few dozen already put every
// key's holder and successor in different processes.
const MaxWorkers = 64

// Run runs sp with its clients spread over workers processes and returns
// the checked outcome, as harness.Run does for one process. workers must
// be 1 to MaxWorkers and at most the run's clients: the clients are split
// among the workers (each runs at least one, and together they run exactly
// the run's number, so the workload's client limit holds across them), and
// so is an open-loop rate, in proportion. The backend must be Redis or
// PostgreSQL (effects must outlive a worker), or memory in a joined run
// whose keys are sharded by host (opts.Join without SpanKeys: each worker
// owns a memory store and ledger, and sends its ledger with its history).
// Errors wrap harness.ErrConfig
// (checked before any process starts) or harness.ErrEnvironment, or are
// ctx's.
func Run(ctx context.Context, sp harness.Spec, workers int, opts Options) (*harness.Outcome, error) {
	switch {
	case workers <= 0:
		return nil, harness.ConfigError("workers: want at least one, got %d", workers)
	case workers > MaxWorkers:
		return nil, harness.ConfigError("workers: %d is above the limit of %d", workers, MaxWorkers)
	case sp.Backend == harness.Memory && opts.Join == nil:
		return nil, harness.ConfigError("%w", ErrLocalMemory)
	case sp.Backend == harness.Memory && opts.Join.SpanKeys:
		return nil, harness.ConfigError("%w", ErrSpanKeysMemory)
	case !sp.Backend.Persistent() && sp.Backend != harness.Memory:
		return nil, harness.ConfigError("worker processes need backend redis or postgres (effects must outlive a worker)")
	case sp.Backend == harness.DynamoDB:
		return nil, harness.ConfigError("worker processes need backend redis or postgres (their effect ledger lives there); run dynamodb in one process")
	}
	p, err := harness.Prepare(ctx, sp)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if p.Config.Completer.Count > 0 {
		return nil, harness.ConfigError("scenario %s runs completers, which run in one process only: leave out --workers", p.Spec.ScenarioName)
	}
	// The coordinator opens the sink too: a usage or environment error
	// is reported before any worker starts, and the ledger is read
	// through it after the run. Memory-backed workers send theirs.
	var sink workload.Sink
	var ledger ledgerSource
	if sp.Backend == harness.Memory {
		s, err := newMemSink(p.Spec.Sink)
		if err != nil {
			return nil, err
		}
		sink = s
	} else {
		s, closeSink, err := openSink(ctx, p.Spec.Engine, p.Spec.Sink, p.Env, p.SinkURL)
		if err != nil {
			return nil, err
		}
		defer closeSink()
		sink, ledger = s, s
	}
	cfg := p.Config
	cfg.Sink = sink
	cfg.Engine.Recovery = p.Recovery
	if cfg, err = workload.Check(cfg); err != nil {
		return nil, harness.ConfigError("%w", err)
	}
	if workers > cfg.Clients {
		return nil, harness.ConfigError("workers: %d worker processes for %d clients: each worker runs at least one client (use at most %d workers, or more clients)",
			workers, cfg.Clients, cfg.Clients)
	}
	hdr := p.Header(cfg)
	hdr.Options["workers"] = strconv.Itoa(workers)
	co := newCoordinator(p, cfg, workers, opts)
	if ledger == nil {
		ledger = &co.sentLedger
	}
	if opts.Join != nil {
		co.inEngineFaults(sp.Scenario.ChaosConfig(sp.Overrides.Seed, cfg.Duration).Faults)
		jr, err := openJoiner(ctx, *opts.Join, workers)
		if err != nil {
			return nil, err
		}
		defer jr.close()
		co.join = jr
	}
	stopWatch := watch(p.Spec.Progress, co.calls, cfg.Duration)
	wctx, stopServerWatch := p.WatchBackend(ctx)
	err = co.run(wctx, cfg.Duration)
	stopWatch()
	if werr := stopServerWatch(); werr != nil && ctx.Err() == nil {
		return nil, werr
	}
	if err != nil {
		if ctx.Err() != nil && p.Spec.Out != "" && co.sent() {
			hdr.Clocks = co.clockBounds()
			return nil, co.savePartial(p.Spec.Out, hdr, err)
		}
		return nil, err
	}
	if err := p.Faults.Err(); err != nil {
		return nil, harness.EnvironmentError(err)
	}
	if err := p.CheckBackend(ctx); err != nil {
		return nil, err
	}
	hdr.Clocks = co.clockBounds()
	h, stats, err := co.assemble(ctx, ledger, hdr)
	if err != nil {
		return nil, err
	}
	lat, err := co.mergedLatency()
	if err != nil {
		return nil, err
	}
	p.Purge(ctx)
	replay := harness.ReplayCommand(p.Spec, cfg) + " --workers " + strconv.Itoa(workers)
	if j := opts.Join; j != nil {
		// The workers join again, each with the command the run prints.
		replay += " --join " + harness.ShellQuote(j.URL)
		if j.SpanKeys {
			replay += " --join-span-keys"
		}
	}
	o := &harness.Outcome{History: h, Ledger: stats, Duration: cfg.Duration, Clients: cfg.Clients,
		Replay: replay, Latency: lat}
	return p.Finish(o)
}

// ErrLocalMemory and ErrSpanKeysMemory are the configuration errors of a
// run of worker processes on the memory backend that cannot work: a
// memory store and its ledger live in one worker, so its keys must be its
// own (a joined run, keys sharded by host) and its crashes must leave the
// process alive (injected in its engine, as a joined worker's are).
var (
	ErrLocalMemory = errors.New("--workers needs --backend redis or postgres (worker processes on this machine share the run's keys, " +
		"and a crash SIGKILLs a worker, taking a memory store and its ledger with it); " +
		"memory-backed workers run with --join, each owning its store and keys")
	ErrSpanKeysMemory = errors.New("--join-span-keys needs --backend redis or postgres: workers that share keys must share their store, " +
		"and each memory-backed worker owns its own (leave out --join-span-keys: keys are sharded by host)")
)

// clientShares splits clients among n workers (0 < n <= clients): each
// gets clients/n, and the first clients%n one more, so that the shares add
// up to clients exactly.
func clientShares(clients, n int) []int {
	shares := make([]int, n)
	for i := range shares {
		shares[i] = clients / n
		if i < clients%n {
			shares[i]++
		}
	}
	return shares
}

// Package cli is the idembench command line as a library: flags,
// environment, exit codes, printing and progress, one file per subcommand,
// on top of the harness. cmd/idembench is Main with the engines that ship
// with idembench; a store author builds the same binary with their own
// engine appended and gets every subcommand for it:
//
//	func main() {
//		mine := harness.StoreFactory{Name: "mystore", Open: openMyStore}
//		os.Exit(cli.Main(os.Args[1:], append(engines.Builtin(), mine)...))
//	}
//
//	idembench run                                   # memory backend, scenario default, ~10 s
//	idembench run --scenario gc-pause --sink plain  # the theory's unsafe cell: caught (exit 1)
//	idembench run --engine naive/check-then-act --scenario duplicates
//	idembench run --backend redis --workers 4 --scenario gc-pause --sink plain
//	idembench check idembench-out/20260101-120000.000   # re-check a saved run offline
//	idembench matrix --quick --out matrix-out           # the safety matrix, expected vs observed
//	idembench report idembench-out/20260101-120000.000  # rebuild its reports from history.jsonl
//	idembench compare --backends memory,redis,postgres --duration 5s --out cmp
//	idembench scenarios                                  # the catalog, one line each
//
// Every command takes --json (stdout: one JSON document; text to stderr).
// --backend redis|postgres without a URL uses IDEM_REDIS_URL /
// IDEM_POSTGRES_URL, else the docker-compose.yml servers.
//
// Exit codes: 0 pass · 1 safety violation · 2 usage or configuration error ·
// 3 inconclusive (checker budget ran out) · 4 threshold missed · 5
// environment error (backend unreachable, or a backend that died during a
// run by no fault of its plan) · 130 interrupted (SIGINT or SIGTERM; the
// one line printed says what was written).
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/scenarios"
)

// Version is the tool version written into every history header and
// printed by --version: the idembench module version of the build, or
// "devel".
var Version = history.ToolVersion()

// commands lists the subcommands, in the order --help shows them. A new
// subcommand is one file and one line here.
type commands struct {
	globals
	Run       runCmd       `cmd:"" help:"Run a scenario against an engine configuration, check the history and report."`
	Check     checkCmd     `cmd:"" help:"Re-check a saved history (a run directory or a history.jsonl file) offline."`
	Report    reportCmd    `cmd:"" help:"Rebuild summary.json, report.md, report.html and the plots of a run directory from its history.jsonl."`
	Compare   compareCmd   `cmd:"" help:"Run one scenario and seed against several backends, sinks or engines (or load saved runs) and compare them side by side."`
	Scenarios scenariosCmd `cmd:"" help:"List the built-in scenarios, one line each."`
	Matrix    matrixCmd    `cmd:"" help:"Run the safety matrix (configuration × fault) and compare each cell with its expected verdict."`
	Engines   enginesCmd   `cmd:"" help:"List the engines this binary can run, with their backends."`
	HTTP      httpCmd      `cmd:"" name:"http" help:"Check a running HTTP service that speaks Idempotency-Key, in any language: drive it, inject faults, read an effect oracle, run the conformance probes."`
	Sweep     sweepCmd     `cmd:"" help:"Latency against load: find each backend's closed-loop rate, offer open-loop loads from 10% to 150% of it, check every step, and report the maximum rate within a p99 objective with the knee plot."`
	Consume   consumeCmd   `cmd:"" help:"Consume from a real broker (RabbitMQ, NATS JetStream) with aimed consumer crashes before the ack, pauses and restarts; check every message's effect at most once."`
	Clean     cleanCmd     `cmd:"" help:"Delete the keys and rows that earlier runs left on Redis or PostgreSQL (--all or --older-than)."`
	Help      helpCmd      `cmd:"" help:"Print the help of a command (its flags, examples and exit codes), or with no command this list."`
	Worker    workerCmd    `cmd:"" hidden:"" help:"One worker process of run --workers or consume --processes (internal)."`
}

// globals are the flags every subcommand takes.
type globals struct {
	Version    kong.VersionFlag `help:"Print the idembench version and exit." name:"version"`
	JSON       bool             `help:"Print machine-readable JSON on stdout (run, report: summary.json; check: the verdict; compare: the table; scenarios: the list); human-readable text goes to stderr." name:"json"`
	NoProgress bool             `help:"Do not show the live progress line (on a terminal) or the periodic progress lines (otherwise) on stderr." name:"no-progress"`
}

// stdio bundles where a command prints; tests substitute buffers.
type stdio struct {
	out, err io.Writer
}

// Main runs the command line args (without the program name) with the
// given engines registered, stopping at SIGINT or SIGTERM, and returns
// the exit code. It is the whole of a main function.
func Main(args []string, engines ...harness.StoreFactory) int {
	// A run keeps its whole history in memory until it is checked: collect
	// less often, so that the driver does not spend a quarter of its time
	// rescanning the history it is recording (memory is cheap next to a
	// skewed throughput figure).
	debug.SetGCPercent(400)
	quietRedis()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, args, os.Stdout, os.Stderr, engines...)
	stop()
	_ = servers.StopAll() // private servers of a run cut short
	return code
}

// Run is Main on ctx and the given writers, without signal handling.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, engines ...harness.StoreFactory) int {
	std := stdio{out: stdout, err: stderr}
	reg, err := harness.NewRegistry(engines...)
	if err != nil {
		fmt.Fprintln(std.err, "idembench:", err)
		return exitUsage
	}
	var c commands
	exited := -1
	parser, err := kong.New(&c,
		kong.Name("idembench"),
		kong.Description(description),
		kong.UsageOnError(),
		kong.Writers(std.out, std.err),
		kong.Exit(func(code int) { exited = code; panic(exitPanic{}) }),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(std, reg),
		kong.Vars{
			"scenarios": strings.Join(scenarios.Names(), ", "),
			"engines":   strings.Join(reg.Names(), ", "),
			"version":   "idembench " + Version,
		},
	)
	if err != nil {
		fmt.Fprintln(std.err, "idembench:", err)
		return exitUsage
	}
	args, err = helpArgs(parser, args)
	if err != nil {
		fmt.Fprintln(std.err, "idembench:", err)
		return exitUsage
	}
	kctx, err := parse(parser, args)
	if exited >= 0 {
		return exited
	}
	if err != nil {
		fmt.Fprintln(std.err, "idembench:", err)
		return exitUsage
	}
	err = kctx.Run(&c.globals)
	code := exitCode(err)
	if err != nil && !alreadyReported(err) {
		fmt.Fprintln(std.err, "idembench:", err)
	}
	return code
}

// exitPanic unwinds kong's Exit (help, version) without leaving the process.
type exitPanic struct{}

func parse(parser *kong.Kong, args []string) (kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitPanic); !ok {
				panic(r)
			}
		}
	}()
	return parser.Parse(args)
}

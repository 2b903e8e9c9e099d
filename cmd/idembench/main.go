// Command idembench drives an idempotency engine with concurrent clients and
// faults, records what every client saw and every side effect that happened,
// and proves or refutes "no double execution" (invariants I1-I6 of
// VERIFICATION.md).
//
//	idembench run                                   # memory backend, scenario default, ~10 s
//	idembench run --scenario gc-pause --sink plain  # the theory's unsafe cell: caught (exit 1)
//	idembench run --scenario crash-after-effect --no-recovery
//	idembench run --engine naive/check-then-act --scenario duplicates
//	idembench run --scenario ./my-scenario.yaml --duration 30s --clients 64 --seed 7
//	idembench check idembench-out/20260101-120000.000   # re-check a saved run offline
//	idembench run --backend postgres --sink tx --scenario crash-after-effect
//	idembench run --backend redis --workers 4 --scenario gc-pause --sink plain   # SIGSTOP'ed worker: exit 1
//	idembench matrix --quick --out matrix-out           # the safety matrix, expected vs observed
//	idembench report idembench-out/20260101-120000.000  # rebuild its reports from history.jsonl
//	idembench compare --backends memory,redis,postgres --duration 5s --out cmp
//	idembench compare --sinks fenced,plain --scenario gc-pause   # plain is caught (exit 1)
//	idembench scenarios                              # the catalog, one line each
//
// Every command takes --json (stdout: one JSON document; text to stderr).
// --backend redis|postgres without a URL uses IDEM_REDIS_URL /
// IDEM_POSTGRES_URL, else the docker-compose.yml servers.
//
// run prints the verdict, the calls per outcome, throughput (the driver's
// recorded operations per second and completed calls per second), latency
// p50/p90/p99/p99.9/max, the seed and the exact command that replays the
// run, and writes the run directory under --out, by default
// ./idembench-out/<timestamp>: history.jsonl, the reports package's
// summary.json, report.md, report.html and plots, and violations/*.html
// (Porcupine, for keys that fail I4). --max-p99, --min-throughput and
// --max-error-rate set thresholds (exit 4 when missed). The defaults are the
// safe configuration: --engine idem --sink fenced --recovery.
//
// Built-in scenarios (scenarios package; --scenario also takes a YAML path):
// default, duplicates, retry-storm, slow-handler, gc-pause,
// crash-after-effect, crash-holder, pause-then-fail, throughput.
//
// Exit codes: 0 pass · 1 safety violation · 2 usage or configuration error ·
// 3 inconclusive (checker budget ran out) · 4 threshold missed · 5
// environment error (backend unreachable).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/scenarios"
)

// Exit codes, as VERIFICATION.md defines them.
const (
	exitOK           = 0
	exitViolation    = 1
	exitUsage        = 2
	exitInconclusive = 3
	exitThreshold    = 4
	exitEnvironment  = 5
)

// version is the tool version written into every history header.
var version = "dev"

type cli struct {
	globals
	Run       runCmd       `cmd:"" default:"withargs" help:"Run a scenario against an engine configuration, check the history and report."`
	Check     checkCmd     `cmd:"" help:"Re-check a saved history (a run directory or a history.jsonl file) offline."`
	Report    reportCmd    `cmd:"" help:"Rebuild summary.json, report.md, report.html and the plots of a run directory from its history.jsonl."`
	Compare   compareCmd   `cmd:"" help:"Run one scenario and seed against several backends, sinks or engines (or load saved runs) and compare them side by side."`
	Scenarios scenariosCmd `cmd:"" help:"List the built-in scenarios, one line each."`
	Matrix    matrixCmd    `cmd:"" help:"Run the safety matrix (configuration × fault) and compare each cell with its expected verdict."`
	Worker    workerCmd    `cmd:"" hidden:"" help:"One worker process of run --workers (internal)."`
}

// globals are the flags every subcommand takes.
type globals struct {
	JSON       bool `help:"Print machine-readable JSON on stdout (run, report: summary.json; check: the verdict; compare: the table; scenarios: the list); human-readable text goes to stderr." name:"json"`
	NoProgress bool `help:"Do not show the live progress line (on a terminal) or the periodic progress lines (otherwise) on stderr." name:"no-progress"`
}

// exitError carries an exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func envErr(err error) error { return &exitError{code: exitEnvironment, err: err} }

// io bundles where a command prints; tests substitute buffers.
type stdio struct {
	out, err io.Writer
}

func main() {
	// A run keeps its whole history in memory until it is checked: collect
	// less often, so that the driver does not spend a quarter of its time
	// rescanning the history it is recording (memory is cheap next to a
	// skewed throughput figure).
	debug.SetGCPercent(400)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], stdio{out: os.Stdout, err: os.Stderr})
	stop()
	_ = servers.StopAll() // private servers of a run cut short

	os.Exit(code)
}

// realMain parses args, runs the command and returns the exit code.
func realMain(ctx context.Context, args []string, std stdio) int {
	var c cli
	exited := -1
	parser, err := kong.New(&c,
		kong.Name("idembench"),
		kong.Description("Idempotency-key engine harness: drive, inject faults, record, check."),
		kong.UsageOnError(),
		kong.Writers(std.out, std.err),
		kong.Exit(func(code int) { exited = code; panic(exitPanic{}) }),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(std),
		kong.Vars{
			"scenarios": strings.Join(scenarios.Names(), ", "),
			"naive":     strings.Join(engineNames()[1:], ", "),
		},
	)
	if err != nil {
		fmt.Fprintln(std.err, "idembench:", err)
		return exitUsage
	}
	kctx, err := parse(parser, args, &exited)
	if exited >= 0 {
		return exited
	}
	if err != nil {
		fmt.Fprintln(std.err, "idembench:", err)
		return exitUsage
	}
	err = kctx.Run(&c.globals)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitViolation && ee.code != exitInconclusive && ee.code != exitThreshold {
			fmt.Fprintln(std.err, "idembench:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(std.err, "idembench:", err)
	return exitUsage
}

// exitPanic unwinds kong's Exit (help, version) without leaving the process.
type exitPanic struct{}

func parse(parser *kong.Kong, args []string, exited *int) (kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitPanic); !ok {
				panic(r)
			}
		}
	}()
	return parser.Parse(args)
}

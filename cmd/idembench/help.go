package main

// The detailed help of each subcommand (kong prints it under the one-line
// help of `idembench CMD --help`), with examples.

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

Examples:

    idembench run                                    # memory backend, scenario default
    idembench run --scenario gc-pause --sink plain   # an unsafe cell: caught, exit 1
    idembench run --backend redis --duration 5s      # local Redis (docker compose up -d)
    idembench run --engine naive/check-then-act --scenario duplicates
    idembench run --max-p99 50ms --min-throughput 1000 --out out/run   # CI gate, exit 4 on a miss
    idembench run --json --no-save | jq .verdict

Exit codes: 0 pass, 1 safety violation, 2 usage error, 3 inconclusive,
4 threshold missed, 5 backend unreachable.`
}

func (c *checkCmd) Help() string {
	return `Re-checks a saved history offline and prints the verdict; the exit code
is the verdict's (0 ok, 1 violation, 3 inconclusive).

Examples:

    idembench check idembench-out/20260101-120000.000
    idembench check run/history.jsonl --timeout 2m
    idembench check --json out/run | jq '.violations[]'`
}

func (c *reportCmd) Help() string {
	return `Rebuilds summary.json, report.md, report.html and the plots of a run
directory from its history.jsonl, for instance after the reports changed.
The verdict stored in summary.json is kept (the command only re-draws and
exits 0) unless --recheck runs the checker again; the exit code is then the
verdict's. Thresholds, the replay command and the machine description are
kept from the stored summary.json.

Examples:

    idembench report idembench-out/20260101-120000.000
    idembench report --recheck out/run
    idembench report --json out/run | jq .throughput_per_s`
}

func (c *compareCmd) Help() string {
	return `Runs the same scenario with the same seed once per configuration, one
after the other (every --backends × --engines × --sinks combination), then
prints the side-by-side table (verdict, violations, calls, throughput,
error rate, p50/p99/p99.9/max latency) and writes compare.md and the
overlaid plots compare-latency.png/.svg and compare-throughput.png/.svg
into --out, with one run directory per configuration (the progress of the
runs goes to stderr, the table alone to stdout). With run directories
as arguments it compares those saved runs instead of running.

The exit code is the worst of the runs: 1 if any run has a safety
violation, else 2 if a configuration could not run, else 5 if a backend
was unreachable, else 3 if a check was inconclusive, else 4 if a run
missed a threshold (--max-p99, --min-throughput, --max-error-rate), else 0.

Examples:

    idembench compare --backends memory,redis,postgres --duration 5s --out cmp
    idembench compare --sinks fenced,plain --scenario gc-pause --duration 2s   # plain is caught: exit 1
    idembench compare --engines idem,naive/check-then-act --scenario duplicates
    idembench compare base/run out/run          # two saved runs side by side
    idembench compare --json --backends memory,redis | jq '.runs[] | {label, p99_ms}'`
}

func (c *scenariosCmd) Help() string {
	return `Lists the built-in scenarios, one line each: the name and the opening of
its description. --json prints every field (full description, duration,
clients, rate, number of faults).

Examples:

    idembench scenarios
    idembench scenarios --json | jq -r '.[].name'
    idembench run --scenario retry-storm`
}

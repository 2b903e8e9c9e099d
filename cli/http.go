package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/blackbox"
	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// httpCmd is `idembench http`: a running HTTP service (any language)
// checked from the outside. Every flag is bounded (checkFlags), the target
// file too (blackbox.LoadTarget), and --out is checked, before any
// request is sent.
type httpCmd struct {
	Target     string         `arg:"" help:"Target file (YAML, at most 1 MiB): the service's URL or start command, the operation, the key header, the effect oracle." placeholder:"TARGET.yaml"`
	Scenario   string         `help:"Take the traffic from this scenario (built-in name or YAML file): its clients, rate, duration, keys and copies, and retry policy, so that it sends what idembench run sends with the same seed. Its engine settings, business function and in-process faults do not apply to a service. Flags given override it." placeholder:"NAME|FILE"`
	Seed       int64          `help:"Seed of keys, amounts, copies and fault times; 0 picks one (printed)."`
	Duration   *time.Duration `help:"How long new requests are sent: above 0, at most 24h (default: 2s, or the scenario's)."`
	Clients    *int           `help:"Concurrent clients (closed loop) or senders (open loop): 1 to 10000 (default: 8, or the scenario's)."`
	Rate       *float64       `help:"Open loop at this many requests per second, at most 1000000; 0 is closed loop (default: 0, or the scenario's)."`
	Faults     []string       `help:"Faults between client and service, or on the started service (at most 100): drop-replies, latency, reset, partition, kill, pause." sep:","`
	Timeout    *time.Duration `help:"Client timeout per attempt (then retried with the same key): 1ms to 10m (default: 500ms, or the scenario's retry.timeout when it has one)."`
	Attempts   *int           `help:"Attempts per request, the first included, with the same key: 1 to 1000 (default: 6, or the scenario's). Raise it with --backoff when the service restarts (kill faults) so that keys in flight outlive the restart."`
	Backoff    *time.Duration `help:"Wait before the first retry, doubled at each further retry: 0 to 10m (default: 20ms, or the scenario's)."`
	Strict     bool           `help:"Fail a protocol deviation (a MUST probe failed, no safety violation) with exit 1 instead of 6."`
	ProbeAfter time.Duration  `help:"Wait after the traffic before the liveness probe, at most 10m (set it above the service's lease; 0: the default, 500ms)."`
	StartArg   []string       `help:"Argument appended to the target's start command (repeatable, at most 100 in all with the command), e.g. --start-arg=--flaw=check-then-act." name:"start-arg"`
	Out        string         `help:"Run directory: missing, empty or a previous run, which is replaced (default: ./idembench-out/http-<timestamp>)." placeholder:"DIR"`
	NoSave     bool           `help:"Do not write the run directory." name:"no-save"`
	FuzzFP     int            `help:"Run the fingerprint fuzzer: N variants of the request, each on a new key after the original (equivalent ones must be replayed, different ones refused with 422); 0 to 1000 (default 0: off)." name:"fuzz-fingerprint" placeholder:"N"`

	effective blackbox.Spec // the load the run sends, for the replay line
}

func (c *httpCmd) Run(ctx context.Context, std stdio, g *globals) error {
	if err := c.checkFlags(); err != nil {
		return err
	}
	tg, err := blackbox.LoadTarget(c.Target)
	if err != nil {
		return runError(err)
	}
	if len(c.StartArg) > 0 {
		if tg.Start == nil {
			return usage("--start-arg: the target %s has no start command to append it to", c.Target)
		}
		tg.Start.Command = append(tg.Start.Command, c.StartArg...)
	}
	seed := harness.Seed(c.Seed)
	sp, notes, err := c.spec(tg, seed)
	if err != nil {
		return err
	}
	for _, k := range c.Faults {
		if k = strings.TrimSpace(k); k != "" {
			sp.Faults = append(sp.Faults, chaos.Fault{Kind: history.FaultKind(k)})
		}
	}
	if err := sp.Validate(); err != nil {
		return runError(err)
	}
	dir, err := newOutDir(httpRunDir(c.Out, c.NoSave))
	if err != nil {
		return err
	}
	sp.Dir = dir.runPath()
	sp.FuzzFingerprint = c.FuzzFP
	sp.ReplayCommand = c.replay(seed)
	text := textOut(std, g)
	for _, n := range notes {
		fmt.Fprintln(text, "note:", n)
	}
	o, err := untilInterrupted(ctx, func() (blackbox.Outcome, error) { return blackbox.Run(ctx, sp) })
	if ctx.Err() != nil {
		if cerr := dir.commit(); cerr != nil {
			return fmt.Errorf("%w: %v", errInterrupted, cerr)
		}
		return interrupted(dir.final)
	}
	if noVerdict(err) {
		dir.discard()
		return runError(err)
	}
	if cerr := dir.commit(); cerr != nil {
		return cerr
	}
	if o.Dir != "" {
		o.Dir = dir.final
	}
	printHTTP(text, &o)
	if o.History != nil { // the run started: there is something to replay
		fmt.Fprintln(text, "replay:", sp.ReplayCommand)
	}
	if jerr := writeSummaryJSON(std, g, o.Summary); jerr != nil {
		return jerr
	}
	return runError(err)
}

// Help is the detailed help of `idembench http --help`, with examples.
func (c *httpCmd) Help() string {
	return `Checks a running HTTP service that speaks Idempotency-Key, in any
language: runs the conformance probes, drives the workload (duplicates,
client timeouts and retries, reused keys with other bodies) through the
faults, probes liveness, reads the target's effect oracle, checks the
history and writes the run directory (history.jsonl, summary.json,
report.md, report.html, plots, conformance.json).

Limits, checked before any request: the target file at most 1 MiB, its
method and header names HTTP tokens and its header values without control
bytes, start.ready_timeout and oracle.latency at most 10m; the flags as
their help says. --out may be missing, empty or a previous run (replaced
whole); anything else is refused.

A run in which no request succeeded and the oracle saw no effect has
nothing to check: it exits 2 when every answer that came back refused the
request (a 4xx other than 408, 409 and 429: fix the target's method, path,
headers or body), else 5 (a 5xx, 408, 409 or 429, or no answer at all: the
service does not work).
A service started by the target that exits during the run without a
kill fault also exits 5, naming it. A double execution or a broken replay
exits 1; a protocol deviation (a MUST of the draft or of the target's
profile, and no safety violation) exits 6, or 1 under --strict; a failed
SHOULD or MAY is a warning in the table. SIGINT or SIGTERM exits 130 within
2 s, saving the history so far in the run directory.

Examples:

    idembench http examples/httpserver/target.yaml
    idembench http target.yaml --faults drop-replies,kill --duration 10s --out out/http
    idembench http target.yaml --start-arg=--flaw=check-then-act --no-save   # caught: exit 1
    idembench http target.yaml --json --no-save | jq .verdict

` + allExitCodesHelp
}

// httpRunDir returns the run directory of --out and --no-save.
func httpRunDir(out string, noSave bool) string {
	switch {
	case noSave:
		return ""
	case out == "":
		return filepath.Join("idembench-out", "http-"+time.Now().Format("20060102-150405.000"))
	}
	return out
}

// The load of a run without --scenario.
const (
	httpDuration = 2 * time.Second
	httpClients  = 8
	httpTimeout  = 500 * time.Millisecond
)

// spec returns the run's spec without its faults: the load of --scenario,
// or the http default (one concurrent and one delayed copy of every
// request, 2% of keys reused with another body, six attempts), with the
// flags given in place. notes say what of the scenario a service cannot
// take.
func (c *httpCmd) spec(tg *blackbox.Target, seed int64) (blackbox.Spec, []string, error) {
	sp := blackbox.Spec{
		Target: tg, Seed: seed, Duration: httpDuration, Clients: httpClients, ProbeAfter: c.ProbeAfter,
		Keys:  workload.Keys{Concurrent: 1, Delayed: 1, Delay: 50 * time.Millisecond, MismatchRate: 0.02},
		Retry: workload.Retry{MaxAttempts: 6, Timeout: httpTimeout, Backoff: 20 * time.Millisecond},
	}
	var notes []string
	if c.Scenario != "" {
		sc, err := scenarios.Load(c.Scenario)
		if err != nil {
			return sp, nil, usage("--scenario: %w", err)
		}
		w := sc.Workload(0)
		sp.Duration, sp.Clients, sp.Rate, sp.Keys, sp.Retry = w.Duration, w.Clients, w.Rate, w.Keys, w.Retry
		if sp.Clients == 0 {
			sp.Clients = workload.DefaultClients
		}
		if sp.Retry.Timeout == 0 {
			sp.Retry.Timeout = httpTimeout
		}
		if len(sc.Faults) > 0 {
			notes = append(notes, fmt.Sprintf("scenario %s: its %d in-process fault(s) (crash, pause at an engine point) do not apply to a service over HTTP; --faults injects faults here", sc.Name, len(sc.Faults)))
		}
	}
	if c.Duration != nil {
		sp.Duration = *c.Duration
	}
	if c.Clients != nil {
		sp.Clients = *c.Clients
	}
	if c.Rate != nil {
		sp.Rate = *c.Rate
	}
	if c.Timeout != nil {
		sp.Retry.Timeout = *c.Timeout
	}
	if c.Attempts != nil {
		sp.Retry.MaxAttempts = *c.Attempts
	}
	if c.Backoff != nil {
		sp.Retry.Backoff = *c.Backoff
	}
	sp.Strict = c.Strict
	c.effective = sp
	return sp, notes, nil
}

// checkFlags checks every flag against its limit, naming the flag: the
// workload's limits (workload.MaxDuration, MaxClients, MaxRate,
// MinTimeout, MaxWait) and blackbox's (MaxWait, MaxFaults, MaxEntries).
func (c *httpCmd) checkFlags() error {
	duration, clients, rate, timeout := httpDuration, httpClients, 0.0, httpTimeout
	if c.Duration != nil {
		duration = *c.Duration
	}
	if c.Clients != nil {
		clients = *c.Clients
	}
	if c.Rate != nil {
		rate = *c.Rate
	}
	if c.Timeout != nil {
		timeout = *c.Timeout
	}
	switch {
	case duration <= 0:
		return usage("--duration: %s must be above 0", duration)
	case duration > workload.MaxDuration:
		return usage("--duration: %s is above the limit of %s", duration, workload.MaxDuration)
	case clients < 1:
		return usage("--clients: %d is below the minimum of 1", clients)
	case clients > workload.MaxClients:
		return usage("--clients: %d is above the limit of %d", clients, workload.MaxClients)
	case math.IsNaN(rate) || math.IsInf(rate, 0):
		return usage("--rate: %g is not a finite number", rate)
	case rate < 0:
		return usage("--rate: %g is negative", rate)
	case rate > workload.MaxRate:
		return usage("--rate: %g is above the limit of %d", rate, workload.MaxRate)
	case timeout < workload.MinTimeout:
		return usage("--timeout: %s is below the minimum of %s", timeout, workload.MinTimeout)
	case timeout > workload.MaxWait:
		return usage("--timeout: %s is above the limit of %s", timeout, workload.MaxWait)
	case c.ProbeAfter < 0:
		return usage("--probe-after: %s is negative", c.ProbeAfter)
	case c.ProbeAfter > blackbox.MaxWait:
		return usage("--probe-after: %s is above the limit of %s", c.ProbeAfter, blackbox.MaxWait)
	case c.Attempts != nil && *c.Attempts < 1:
		return usage("--attempts: %d is below the minimum of 1", *c.Attempts)
	case c.Attempts != nil && *c.Attempts > workload.MaxAttempts:
		return usage("--attempts: %d is above the limit of %d", *c.Attempts, workload.MaxAttempts)
	case c.Backoff != nil && *c.Backoff < 0:
		return usage("--backoff: %s is negative", *c.Backoff)
	case c.Backoff != nil && *c.Backoff > workload.MaxWait:
		return usage("--backoff: %s is above the limit of %s", *c.Backoff, workload.MaxWait)
	case len(c.Faults) > blackbox.MaxFaults:
		return usage("--faults: %d faults, above the limit of %d", len(c.Faults), blackbox.MaxFaults)
	case c.FuzzFP < 0 || c.FuzzFP > blackbox.MaxFuzzCases:
		return usage("--fuzz-fingerprint: %d is not between 0 and %d", c.FuzzFP, blackbox.MaxFuzzCases)
	case len(c.StartArg) > blackbox.MaxEntries:
		return usage("--start-arg: %d arguments, above the limit of %d", len(c.StartArg), blackbox.MaxEntries)
	}
	for _, k := range c.Faults {
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(blackbox.FaultKinds, history.FaultKind(k)) {
			return usage("--faults: unknown fault %q (want one of %s)", k, history.JoinFaultKinds(blackbox.FaultKinds))
		}
	}
	return nil
}

// replay returns the command line that repeats the run.
func (c *httpCmd) replay(seed int64) string {
	e := &c.effective
	s := invokedAs() + " http " + harness.ShellQuote(c.Target)
	if c.Scenario != "" {
		s += " --scenario " + harness.ShellQuote(c.Scenario)
	}
	s += fmt.Sprintf(" --seed %d --duration %s --clients %d --timeout %s --attempts %d --backoff %s",
		seed, e.Duration, e.Clients, e.Retry.Timeout, e.Retry.MaxAttempts, e.Retry.Backoff)
	if e.Rate > 0 {
		s += fmt.Sprintf(" --rate %g", e.Rate)
	}
	if len(c.Faults) > 0 {
		s += " --faults " + strings.Join(c.Faults, ",")
	}
	if c.ProbeAfter > 0 {
		s += " --probe-after " + c.ProbeAfter.String()
	}
	if c.FuzzFP > 0 {
		s += " --fuzz-fingerprint " + strconv.Itoa(c.FuzzFP)
	}
	for _, a := range c.StartArg {
		s += " --start-arg=" + harness.ShellQuote(a)
	}
	if c.Strict {
		s += " --strict"
	}
	return s
}

// printHTTP prints the verdict, the violations and the conformance table.
func printHTTP(w io.Writer, o *blackbox.Outcome) {
	if o.History == nil {
		return
	}
	st := o.Check.Stats
	faults := strconv.Itoa(st.Faults) + " fault windows"
	if by := history.CountFaults(o.History.Ops).String(); by != "" && st.Faults > 0 {
		faults += " (" + by + ")"
	}
	fmt.Fprintf(w, "target %s, seed %d: %d calls, %d effects (%s oracle), %s\n",
		o.History.Header.Scenario, o.History.Header.Seed, st.Calls, st.Effects, o.Oracle, faults)
	if s := o.Summary; s != nil {
		fmt.Fprintf(w, "throughput %.0f calls/s, p99 %.1f ms, outcomes: executed %d, replayed %d, in_progress %d, mismatch %d, unknown %d\n",
			s.ThroughputPerS, s.Latency.Overall.P99Ms, s.Outcomes["executed"], s.Outcomes["replayed"],
			s.Outcomes["in_progress"], s.Outcomes["mismatch"], s.Outcomes["unknown"])
	}
	fmt.Fprintf(w, "verdict: %s\n", blackbox.Headline(o))
	for _, v := range o.Check.Violations[:min(3, len(o.Check.Violations))] {
		fmt.Fprintf(w, "  %s %s, key %s: %s\n", v.Invariant, v.Invariant.Name(), v.Key, v.Message)
	}
	// One count everywhere: the invariants' totals, as summary.json (which
	// lists every violation) and report.md give it.
	if n := o.Summary.ViolationCount(); n > 3 {
		if o.Dir != "" {
			fmt.Fprintf(w, "  ... %d violations in all, listed in %s (the first %d) and %s (all)\n", n,
				filepath.Join(o.Dir, reports.MarkdownFile), reports.MaxListedViolations, filepath.Join(o.Dir, reports.SummaryFile))
		} else {
			fmt.Fprintf(w, "  ... %d violations in all (no report written under --no-save; --json prints the list)\n", n)
		}
	}
	for _, n := range o.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if len(o.Conformance) > 0 {
		profile := o.Profile
		if profile == "" {
			profile = blackbox.ProfileIETF
		}
		fmt.Fprintf(w, "conformance (%s, profile %s; ids for conformance.deviations and levels):\n", blackbox.Draft, profile)
		for _, p := range o.Conformance {
			obs := p.Observed
			if p.Level != "" {
				obs = "[" + p.Level + ", " + p.Class + "] " + obs
			}
			if p.Reason != "" {
				obs += " (declared: " + p.Reason + ")"
			}
			fmt.Fprintf(w, "  %-9s %-20s %-5s %s\n", p.Status, p.ID, strings.TrimPrefix(p.Section, blackbox.Draft+" "), obs)
		}
	}
	if o.Dir != "" {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(o.Dir, reports.MarkdownFile))
	}
}

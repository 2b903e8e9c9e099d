package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/idembench/idembench/blackbox"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/workload"
)

// httpCmd is `idembench http`: a running HTTP service (any language)
// checked from the outside.
type httpCmd struct {
	Target     string        `arg:"" help:"Target file (YAML): the service's URL or start command, the operation, the key header, the effect oracle." placeholder:"TARGET.yaml"`
	Seed       int64         `help:"Seed of keys, amounts, copies and fault times; 0 picks one (printed)."`
	Duration   time.Duration `help:"How long new requests are sent." default:"2s"`
	Clients    int           `help:"Concurrent clients (closed loop) or senders (open loop)." default:"8"`
	Rate       float64       `help:"Open loop at this many requests per second; 0 is closed loop."`
	Faults     []string      `help:"Faults between client and service, or on the started service: drop-replies, latency, reset, partition, kill, pause." sep:","`
	Timeout    time.Duration `help:"Client timeout per attempt (then retried with the same key)." default:"500ms"`
	ProbeAfter time.Duration `help:"Wait after the traffic before the liveness probe (set it above the service's lease; 0: the default)."`
	StartArg   []string      `help:"Argument appended to the target's start command (repeatable), e.g. --start-arg=--flaw=check-then-act." name:"start-arg"`
	Out        string        `help:"Run directory (default: ./idembench-out/http-<timestamp>)." placeholder:"DIR"`
	NoSave     bool          `help:"Do not write the run directory." name:"no-save"`
}

func (c *httpCmd) Run(ctx context.Context, std stdio, g *globals) error {
	tg, err := blackbox.LoadTarget(c.Target)
	if err != nil {
		return blackboxErr(err)
	}
	if len(c.StartArg) > 0 && tg.Start != nil {
		tg.Start.Command = append(tg.Start.Command, c.StartArg...)
	}
	seed := harness.Seed(c.Seed)
	sp := blackbox.Spec{
		Target: tg, Seed: seed, Duration: c.Duration, Clients: c.Clients, Rate: c.Rate, ProbeAfter: c.ProbeAfter,
		Keys:  workload.Keys{Concurrent: 1, Delayed: 1, Delay: 50 * time.Millisecond, MismatchRate: 0.02},
		Retry: workload.Retry{MaxAttempts: 6, Timeout: c.Timeout, Backoff: 20 * time.Millisecond},
	}
	for _, k := range c.Faults {
		if k = strings.TrimSpace(k); k != "" {
			sp.Faults = append(sp.Faults, blackbox.Fault{Kind: k})
		}
	}
	if !c.NoSave {
		sp.Dir = c.Out
		if sp.Dir == "" {
			sp.Dir = filepath.Join("idembench-out", "http-"+time.Now().Format("20060102-150405.000"))
		}
	}
	sp.ReplayCommand = c.replay(seed)
	out := std.out
	if g.JSON {
		out = std.err
	}
	o, err := blackbox.Run(ctx, sp)
	printHTTP(out, &o)
	fmt.Fprintln(out, "replay:", sp.ReplayCommand)
	if g.JSON && o.Summary != nil {
		if jerr := writeJSON(std.out, o.Summary); jerr != nil {
			return jerr
		}
	}
	return blackboxErr(err)
}

// replay returns the command line that repeats the run.
func (c *httpCmd) replay(seed int64) string {
	s := fmt.Sprintf("idembench http %s --seed %d --duration %s --clients %d --timeout %s", harness.ShellQuote(c.Target), seed, c.Duration, c.Clients, c.Timeout)
	if c.Rate > 0 {
		s += fmt.Sprintf(" --rate %g", c.Rate)
	}
	if len(c.Faults) > 0 {
		s += " --faults " + strings.Join(c.Faults, ",")
	}
	if c.ProbeAfter > 0 {
		s += " --probe-after " + c.ProbeAfter.String()
	}
	for _, a := range c.StartArg {
		s += " --start-arg=" + harness.ShellQuote(a)
	}
	return s
}

// blackboxErr maps blackbox's errors onto the CLI's exit codes.
func blackboxErr(err error) error {
	switch blackbox.ExitCode(err) {
	case blackbox.ExitPass:
		return nil
	case blackbox.ExitUsage:
		return usage("%v", err)
	case blackbox.ExitViolation:
		return codeError(exitViolation, err.Error())
	case blackbox.ExitInconclusive:
		return codeError(exitInconclusive, err.Error())
	case blackbox.ExitThreshold:
		return codeError(exitThreshold, err.Error())
	}
	return fmt.Errorf("%w: %v", harness.ErrEnvironment, err)
}

// printHTTP prints the verdict, the violations and the conformance table.
func printHTTP(w io.Writer, o *blackbox.Outcome) {
	if o.History == nil {
		return
	}
	st := o.Check.Stats
	fmt.Fprintf(w, "target %s, seed %d: %d calls, %d effects (%s oracle), %d fault windows\n",
		o.History.Header.Scenario, o.History.Header.Seed, st.Calls, st.Effects, o.Oracle, st.Faults)
	if s := o.Summary; s != nil {
		fmt.Fprintf(w, "throughput %.0f calls/s, p99 %.1f ms, outcomes: executed %d, replayed %d, in_progress %d, mismatch %d, unknown %d\n",
			s.ThroughputPerS, s.Latency.Overall.P99Ms, s.Outcomes["executed"], s.Outcomes["replayed"],
			s.Outcomes["in_progress"], s.Outcomes["mismatch"], s.Outcomes["unknown"])
	}
	fmt.Fprintf(w, "verdict: %s\n", o.Verdict)
	for _, v := range o.Check.Violations[:min(3, len(o.Check.Violations))] {
		fmt.Fprintf(w, "  %s %s, key %s: %s\n", v.Invariant, v.Invariant.Name(), v.Key, v.Message)
	}
	if n := len(o.Check.Violations); n > 3 {
		fmt.Fprintf(w, "  ... %d violations listed in the report\n", n)
	}
	if len(o.Conformance) > 0 {
		fmt.Fprintf(w, "conformance (%s):\n", blackbox.Draft)
		for _, p := range o.Conformance {
			fmt.Fprintf(w, "  %-9s %-5s %-34s %s\n", p.Status, strings.TrimPrefix(p.Section, blackbox.Draft+" "), p.Title, p.Observed)
		}
	}
	if o.Dir != "" {
		fmt.Fprintf(w, "report: %s/report.md\n", o.Dir)
	}
}

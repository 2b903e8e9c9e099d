package cli

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/sweep"
	"github.com/idembench/idembench/workload"
)

// sweepCmd is `idembench sweep`: latency against load, per backend.
type sweepCmd struct {
	Backends    []string      `help:"Store backends to sweep, one curve each, each at most once: memory, redis, postgres." default:"memory" sep:","`
	Engine      string        `help:"Engine to sweep (this binary: ${engines})." default:"idem" placeholder:"NAME"`
	Sink        string        `help:"Effect sink: plain, fenced or tx." default:"fenced" enum:"plain,fenced,tx"`
	Scenario    string        `help:"Traffic of every step: a built-in scenario or a YAML file (faults included, if it has any)." default:"capacity" placeholder:"NAME|FILE"`
	Clients     int           `help:"Concurrent clients, or open-loop workers: 0 (the scenario's) or 1 to 10000."`
	Step        time.Duration `help:"Length of each step (a run; long enough to settle): 500ms to 1h." default:"4s"`
	Steps       int           `help:"Open-loop steps, geometric from --lo to --hi times the closed-loop rate: 1 to 50." default:"8"`
	Lo          float64       `help:"Lowest offered load, as a fraction of the closed-loop rate: above 0 and below --hi." default:"0.1"`
	Hi          float64       `help:"Highest offered load, as a fraction of the closed-loop rate: above --lo and at most 10." default:"1.5"`
	SLOP99      time.Duration `help:"Latency objective: the maximum sustainable rate is the highest achieved rate with p99 at most this; above 0 and at most 1h." default:"50ms" name:"slo-p99"`
	Seed        int64         `help:"Seed of every step: 0 to 2^53-1; 0 picks one (printed)."`
	RedisURL    string        `help:"Redis URL (default: $IDEM_REDIS_URL, else redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL string        `help:"PostgreSQL URL (default: $IDEM_POSTGRES_URL, else the docker-compose.yml server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	Out         string        `help:"Directory for sweep.json, capacity.md and knee.png/.svg (default: ./idembench-out/sweep-<timestamp>): missing, empty, or an earlier idembench output, which is replaced." placeholder:"DIR"`
}

// spec checks every flag, without running or writing anything, and
// returns the sweep (without Progress).
func (c *sweepCmd) spec(reg *harness.Registry) (sweep.Spec, error) {
	eng, err := reg.Lookup(c.Engine)
	if err != nil {
		return sweep.Spec{}, usage("--engine: %v", err)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.Steps < 1 || c.Steps > sweep.MaxSteps:
		return sweep.Spec{}, usage("--steps %d: want 1 to %d", c.Steps, sweep.MaxSteps)
	case !finite(c.Lo) || !finite(c.Hi) || !(c.Lo > 0 && c.Lo < c.Hi && c.Hi <= sweep.MaxHi):
		return sweep.Spec{}, usage("--lo %g and --hi %g: want numbers with 0 < --lo < --hi ≤ %d", c.Lo, c.Hi, sweep.MaxHi)
	case c.Step < sweep.MinStep || c.Step > sweep.MaxStep:
		return sweep.Spec{}, usage("--step %s: want %s to %s", c.Step, sweep.MinStep, sweep.MaxStep)
	case c.SLOP99 <= 0 || c.SLOP99 > sweep.MaxSLOP99:
		return sweep.Spec{}, usage("--slo-p99 %s: want above 0 and at most %s", c.SLOP99, sweep.MaxSLOP99)
	case c.Clients < 0 || c.Clients > workload.MaxClients:
		return sweep.Spec{}, usage("--clients %d: want 0 (the scenario's) or 1 to %d", c.Clients, workload.MaxClients)
	case c.Seed < 0 || c.Seed > harness.MaxSeed:
		return sweep.Spec{}, usage("--seed %d: want 0 to %d (2^53-1; 0 picks one)", c.Seed, int64(harness.MaxSeed))
	case len(c.Backends) > sweep.MaxTargets:
		return sweep.Spec{}, usage("--backends: at most %d", sweep.MaxTargets)
	}
	sc, err := scenarios.Load(c.Scenario)
	if err != nil {
		return sweep.Spec{}, usage("--scenario: %w", err)
	}
	sp := sweep.Spec{Step: c.Step, Steps: c.Steps, Lo: c.Lo, Hi: c.Hi, SLOP99: c.SLOP99, Seed: harness.Seed(c.Seed)}
	for i, b := range c.Backends {
		backend, err := harness.ParseBackend(b)
		if err != nil {
			return sp, usage("--backends: %q is not memory, redis or postgres", b)
		}
		if slices.Contains(c.Backends[:i], b) {
			return sp, usage("--backends: %s is given twice", b)
		}
		if !eng.Supports(backend) {
			return sp, usage("--engine %s does not run on %s", c.Engine, b)
		}
		u := resolveBackendURL(b, c.RedisURL, c.PostgresURL)
		hs := harness.Spec{Engine: eng, Backend: backend, URL: u.url, Scenario: sc, ScenarioName: c.Scenario, Sink: c.Sink, NoRecovery: c.Sink != "fenced", Program: invokedAs()}
		hs.Overrides.Clients = c.Clients
		hs.Overrides.Duration, hs.Overrides.Seed = c.Step, sp.Seed
		if err := hs.Validate(); err != nil {
			return sp, usage("--backends %s: %v", b, err)
		}
		sp.Targets = append(sp.Targets, sweep.Target{Label: b + " · " + c.Sink, Spec: hs})
	}
	if err := sp.Validate(); err != nil {
		return sp, usage("%v", err)
	}
	return sp, nil
}

func (c *sweepCmd) Run(ctx context.Context, std stdio, g *globals, reg *harness.Registry) error {
	sp, err := c.spec(reg)
	if err != nil {
		return err
	}
	out := c.Out
	if out == "" {
		out = filepath.Join("idembench-out", "sweep-"+time.Now().Format("20060102-150405.000"))
	}
	od, err := newOutDir(out)
	if err != nil {
		return err
	}
	text := textOut(std, g)
	fmt.Fprintf(text, "idembench sweep: %s on %v · %d steps of %s from %.0f%% to %.0f%% of the closed-loop rate · objective p99 ≤ %s · seed %d\n",
		c.Engine, c.Backends, c.Steps, c.Step, 100*c.Lo, 100*c.Hi, c.SLOP99, sp.Seed)
	// partial holds the steps measured so far, for what an interrupt
	// writes while the step under way is left to finish.
	var mu sync.Mutex
	partial := &sweep.Result{SLOP99Ms: float64(c.SLOP99) / float64(time.Millisecond), MaxErrorRate: 0.01, StepS: c.Step.Seconds(), Seed: sp.Seed}
	sp.Progress = func(target string, s sweep.Step) {
		mu.Lock()
		if s.Offered == 0 {
			partial.Curves = append(partial.Curves, sweep.Curve{Label: target, ClosedLoop: s})
		} else if n := len(partial.Curves); n > 0 {
			cv := &partial.Curves[n-1]
			cv.Steps = append(cv.Steps, s)
			if s.Sustainable {
				cv.MaxSustainable = max(cv.MaxSustainable, s.Achieved)
			}
		}
		mu.Unlock()
		if g.NoProgress {
			return
		}
		load := "closed loop"
		if s.Offered > 0 {
			load = fmt.Sprintf("offered %.0f/s", s.Offered)
		}
		fmt.Fprintf(std.err, "  %s · %s: achieved %.0f/s · p50 %.2fms · p99 %.2fms · p99.9 %.2fms · errors %.2f%% · %s\n",
			target, load, s.Achieved, s.P50Ms, s.P99Ms, s.P999Ms, 100*s.ErrorRate, s.Verdict)
	}
	res, err := untilInterrupted(ctx, func() (*sweep.Result, error) { return sweep.Run(ctx, sp) })
	if ctx.Err() != nil {
		mu.Lock()
		res = partial
		mu.Unlock()
		if len(res.Curves) == 0 {
			return interrupted("")
		}
		if _, werr := sweep.Write(od.runPath(), res); werr != nil {
			od.discard()
			return fmt.Errorf("%w: %v", errInterrupted, werr)
		}
		if cerr := od.commit(); cerr != nil {
			return fmt.Errorf("%w: %v", errInterrupted, cerr)
		}
		return interrupted(od.final)
	}
	if err != nil {
		return err
	}
	md, err := sweep.Write(od.runPath(), res)
	if err != nil {
		od.discard()
		return usage("--out %s: %v", od.final, err)
	}
	if err := od.commit(); err != nil {
		return err
	}
	if g.JSON {
		if err := writeJSON(std.out, res); err != nil {
			return err
		}
	} else {
		fmt.Fprint(std.out, md)
	}
	for _, cv := range res.Curves {
		fmt.Fprintf(text, "max sustainable rate at p99 ≤ %s: %s %.0f calls/s (closed loop %.0f/s)\n", c.SLOP99, cv.Label, cv.MaxSustainable, cv.ClosedLoop.Achieved)
	}
	fmt.Fprintf(text, "sweep: %s (%s, %s, knee.png/.svg)\n", od.final, sweep.JSONFile, "capacity.md")
	if n := res.Violations(); n > 0 {
		return codeError(exitViolation, fmt.Sprintf("%d steps found a violation", n))
	}
	return nil
}

// Help is the detailed help of `idembench sweep --help`, with examples.
func (c *sweepCmd) Help() string {
	return `Measures latency against load, one curve per backend: a closed-loop
step finds the rate the backend sustains, then --steps open-loop steps
offer --lo to --hi times that rate (geometric). Every step is a run of
--step with its history checked; a step whose p99 is above --slo-p99,
whose verdict is not ok or with more than 1% errors is not sustainable. It prints capacity.md (one
row per step) and the maximum sustainable rate of each backend, and
writes sweep.json, capacity.md and the knee plot (knee.png/.svg) into
--out. Progress lines (one per step) go to stderr. On SIGINT or SIGTERM
the steps measured so far are written (exit 130).

Examples:

    idembench sweep                                          # memory, about 40 s
    idembench sweep --backends memory,redis,postgres --out sweep-out
    idembench sweep --steps 4 --step 2s --slo-p99 10ms       # a quick, stricter curve
    idembench sweep --json --backends redis | jq '.curves[] | {label, max_sustainable_per_s}'

` + exitHelp(exitOK, exitViolation, exitUsage, exitEnvironment, exitInterrupted) + `
1 means a step found a violation (the curve is then of an unsafe
configuration).`
}

// Package sweep answers "how much load can this backend carry at my p99":
// it finds a target's closed-loop capacity, then offers open-loop loads
// stepped geometrically from a fraction of it to past it, runs and checks
// every step through the harness, and reports the highest rate whose p99
// stays within the objective (the knee). Every step is checked for
// correctness: a backend that is fast but unsafe under load shows it.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/reports"
)

// Spec describes a sweep. Zero fields take the defaults given; Validate
// states the limits of the others.
type Spec struct {
	// Targets are the configurations to sweep, one curve each (1 to
	// MaxTargets): a harness spec with the engine, backend, URL and
	// scenario set (default scenario "capacity"). Duration, rate and
	// closed loop are the sweep's.
	Targets []Target
	// Step is the length of each run (default 4s), MinStep to MaxStep.
	Step time.Duration
	// Steps is the number of open-loop steps (default 8, at most
	// MaxSteps), from Lo to Hi times the closed-loop rate (defaults 0.1
	// and 1.5; 0 < Lo < Hi <= MaxHi), geometrically.
	Steps  int
	Lo, Hi float64
	// SLOP99 is the latency objective: the maximum sustainable rate is the
	// highest achieved rate of a step with p99 at most SLOP99 (at most
	// MaxSLOP99), a passing verdict and an error rate at most MaxErrorRate
	// (at most 1) (defaults 50ms, 1 %).
	SLOP99       time.Duration
	MaxErrorRate float64
	// Seed is every step's seed, 0 to harness.MaxSeed (0: one is picked
	// and used throughout).
	Seed int64
	// Progress, when set, is told each step as it ends.
	Progress func(target string, s Step)
}

// Limits of a Spec, checked by Validate.
const (
	MaxTargets = 10
	MinStep    = 500 * time.Millisecond
	MaxStep    = time.Hour
	MaxSteps   = 50
	MaxHi      = 10
	MaxSLOP99  = time.Hour
)

// Validate checks sp's limits before anything runs: 1 to MaxTargets
// targets with distinct labels; Step 0 or MinStep to MaxStep; Steps 0 or 1
// to MaxSteps; Lo and Hi 0 or finite, with 0 < Lo < Hi <= MaxHi once the
// defaults are in; SLOP99 0 or up to MaxSLOP99; MaxErrorRate 0 or up to 1;
// a Seed harness.CheckSeed accepts. Errors wrap harness.ErrConfig and name
// the field.
func (sp *Spec) Validate() error {
	d := *sp
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case len(sp.Targets) == 0:
		return harness.ConfigError("sweep: no target")
	case len(sp.Targets) > MaxTargets:
		return harness.ConfigError("sweep: %d targets is above the limit of %d", len(sp.Targets), MaxTargets)
	case sp.Step < 0 || sp.Step > 0 && (sp.Step < MinStep || sp.Step > MaxStep):
		return harness.ConfigError("sweep: Step %s: want 0 (4s) or %s to %s", sp.Step, MinStep, MaxStep)
	case sp.Steps < 0 || sp.Steps > MaxSteps:
		return harness.ConfigError("sweep: Steps %d: want 0 (8) or 1 to %d", sp.Steps, MaxSteps)
	case !finite(sp.Lo) || !finite(sp.Hi) || sp.Lo < 0 || sp.Hi < 0:
		return harness.ConfigError("sweep: Lo %g and Hi %g: want finite fractions of the closed-loop rate, not negative", sp.Lo, sp.Hi)
	case sp.SLOP99 < 0 || sp.SLOP99 > MaxSLOP99:
		return harness.ConfigError("sweep: SLOP99 %s: want 0 (50ms) or up to %s", sp.SLOP99, MaxSLOP99)
	case !(sp.MaxErrorRate >= 0 && sp.MaxErrorRate <= 1):
		return harness.ConfigError("sweep: MaxErrorRate %g: want 0 (1%%) to 1", sp.MaxErrorRate)
	}
	if err := harness.CheckSeed(sp.Seed); err != nil {
		return harness.ConfigError("sweep: Seed: %w", err)
	}
	d.defaults()
	if !(d.Lo < d.Hi) || d.Hi > MaxHi {
		return harness.ConfigError("sweep: Lo %g and Hi %g: want 0 < Lo < Hi <= %d", d.Lo, d.Hi, MaxHi)
	}
	labels := map[string]bool{}
	for _, t := range sp.Targets {
		if labels[t.Label] {
			return harness.ConfigError("sweep: two targets labelled %q", t.Label)
		}
		labels[t.Label] = true
	}
	return nil
}

// Target is one configuration of a sweep.
type Target struct {
	Label string
	Spec  harness.Spec
}

// Step is the measurement of one run of a sweep.
type Step struct {
	// Offered is the open-loop rate asked for; 0 for the closed-loop run
	// that measures the capacity.
	Offered float64 `json:"offered_per_s"`
	// Achieved is the completed calls per second.
	Achieved  float64 `json:"achieved_per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p99_9_ms"`
	ErrorRate float64 `json:"error_rate"`
	LateSends int     `json:"late_sends"`
	Verdict   string  `json:"verdict"`
	// Sustainable is whether the step meets the objective.
	Sustainable bool `json:"sustainable"`
	// Replay is the command that repeats the step.
	Replay string `json:"replay"`
	// The cost model, when the store counts its requests
	// (harness.UsageReporter: DynamoDB): DoCalls is the Do calls of the
	// step (clients' calls and probes), Requests, ReadUnits and WriteUnits
	// what they asked of the backend, DollarsPerMillionDo the bill of a
	// million such calls at the price table Prices names.
	DoCalls             int     `json:"do_calls,omitempty"`
	Requests            int64   `json:"requests,omitempty"`
	ReadUnits           float64 `json:"read_units,omitempty"`
	WriteUnits          float64 `json:"write_units,omitempty"`
	DollarsPerMillionDo float64 `json:"dollars_per_million_do,omitempty"`
	Prices              string  `json:"prices,omitempty"`
	// RoundTrips, the server's CPU time per Do (ServerCPU names its
	// source, or says "n/a" and why) and the cost by outcome (first
	// execution, replay, conflict), when the store counts them (Redis,
	// PostgreSQL).
	RoundTrips           int64                 `json:"round_trips,omitempty"`
	ServerCPUMicrosPerDo float64               `json:"server_cpu_us_per_do,omitempty"`
	ServerCPU            string                `json:"server_cpu,omitempty"`
	Outcomes             []reports.OutcomeCost `json:"outcomes,omitempty"`
}

// RoundTripsPerDo is the round trips per Do call of s; 0 when the store
// does not count them.
func (s Step) RoundTripsPerDo() float64 {
	if s.DoCalls == 0 {
		return 0
	}
	return float64(s.RoundTrips) / float64(s.DoCalls)
}

// RequestsPerDo is the backend requests per Do call of s; 0 when the store
// does not count them.
func (s Step) RequestsPerDo() float64 {
	if s.DoCalls == 0 {
		return 0
	}
	return float64(s.Requests) / float64(s.DoCalls)
}

// Curve is the sweep of one target.
type Curve struct {
	Label string `json:"label"`
	// ClosedLoop is the capacity run; Steps the open-loop runs in order.
	ClosedLoop Step   `json:"closed_loop"`
	Steps      []Step `json:"steps"`
	// MaxSustainable is the highest achieved rate of a sustainable step;
	// 0 when none is.
	MaxSustainable float64 `json:"max_sustainable_per_s"`
}

// Result is a whole sweep.
type Result struct {
	SLOP99Ms     float64 `json:"slo_p99_ms"`
	MaxErrorRate float64 `json:"max_error_rate"`
	StepS        float64 `json:"step_s"`
	Seed         int64   `json:"seed"`
	Curves       []Curve `json:"curves"`
}

// Violations counts the steps whose verdict was not ok.
func (r *Result) Violations() int {
	n := 0
	for _, c := range r.Curves {
		for _, s := range append([]Step{c.ClosedLoop}, c.Steps...) {
			if s.Verdict != string(checker.VerdictOK) {
				n++
			}
		}
	}
	return n
}

// ErrNoCapacity reports a target whose closed-loop run completed no call.
var ErrNoCapacity = errors.New("sweep: the closed-loop run completed no call")

func (sp *Spec) defaults() {
	if sp.Step <= 0 {
		sp.Step = 4 * time.Second
	}
	if sp.Steps <= 0 {
		sp.Steps = 8
	}
	if sp.Lo <= 0 {
		sp.Lo = 0.1
	}
	if sp.Hi == 0 {
		sp.Hi = max(1.5, sp.Lo*2)
	}
	if sp.SLOP99 <= 0 {
		sp.SLOP99 = 50 * time.Millisecond
	}
	if sp.MaxErrorRate <= 0 {
		sp.MaxErrorRate = 0.01
	}
	sp.Seed = harness.Seed(sp.Seed)
}

// Rates returns the offered rates of a sweep of capacity: steps rates from
// lo to hi times capacity, each the previous times a constant factor.
func Rates(capacity, lo, hi float64, steps int) []float64 {
	if steps == 1 {
		return []float64{capacity * lo}
	}
	out := make([]float64, steps)
	f := math.Pow(hi/lo, 1/float64(steps-1))
	for i := range out {
		out[i] = math.Round(capacity * lo * math.Pow(f, float64(i)))
	}
	return out
}

// Run sweeps every target in turn, after Validate. Errors wrap
// harness.ErrConfig, harness.ErrEnvironment, ErrNoCapacity or are ctx's; a
// step's violation is not an error (Result.Violations counts them). When
// ctx ends, Run returns the steps measured so far (the curve under way
// included) with ctx's error.
func Run(ctx context.Context, sp Spec) (*Result, error) {
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	sp.defaults()
	res := &Result{SLOP99Ms: ms(sp.SLOP99), MaxErrorRate: sp.MaxErrorRate, StepS: sp.Step.Seconds(), Seed: sp.Seed}
	for _, t := range sp.Targets {
		c, err := sweepTarget(ctx, &sp, t)
		if err != nil && ctx.Err() != nil {
			if c.ClosedLoop.Verdict != "" {
				res.Curves = append(res.Curves, c)
			}
			return res, ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", t.Label, err)
		}
		res.Curves = append(res.Curves, c)
	}
	return res, nil
}

// sweepTarget measures one target: its capacity, then every step.
func sweepTarget(ctx context.Context, sp *Spec, t Target) (Curve, error) {
	c := Curve{Label: t.Label}
	closed, err := runStep(ctx, sp, t, 0)
	if err != nil {
		return c, err
	}
	c.ClosedLoop = closed
	if sp.Progress != nil {
		sp.Progress(t.Label, closed)
	}
	if closed.Achieved <= 0 {
		return c, ErrNoCapacity
	}
	for _, rate := range Rates(closed.Achieved, sp.Lo, sp.Hi, sp.Steps) {
		s, err := runStep(ctx, sp, t, rate)
		if err != nil {
			return c, err
		}
		c.Steps = append(c.Steps, s)
		if s.Sustainable {
			c.MaxSustainable = max(c.MaxSustainable, s.Achieved)
		}
		if sp.Progress != nil {
			sp.Progress(t.Label, s)
		}
	}
	return c, nil
}

// runStep runs t at rate (0: closed loop) for one step and measures it.
func runStep(ctx context.Context, sp *Spec, t Target, rate float64) (Step, error) {
	hs := t.Spec
	if hs.Scenario == nil && hs.ScenarioName == "" {
		hs.ScenarioName = "capacity"
	}
	hs.Out, hs.Progress = "", nil
	hs.Overrides.Duration, hs.Overrides.Seed = sp.Step, sp.Seed
	hs.Overrides.Rate, hs.Overrides.ClosedLoop = rate, rate == 0
	out, err := harness.Run(ctx, hs)
	if err != nil {
		return Step{}, err
	}
	sum := out.Summary
	lat := sum.Latency.Overall
	s := Step{
		Offered: rate, Achieved: sum.ThroughputPerS, P50Ms: lat.P50Ms, P99Ms: lat.P99Ms, P999Ms: lat.P999Ms,
		ErrorRate: sum.ErrorRate, LateSends: sum.LateSends.Count, Verdict: string(out.Verdict()), Replay: out.Replay,
	}
	if c := sum.Cost; c != nil {
		s.DoCalls, s.Requests, s.ReadUnits, s.WriteUnits = c.DoCalls, c.Requests, c.ReadUnits, c.WriteUnits
		s.DollarsPerMillionDo, s.Prices = c.DollarsPerMillionDo, c.Prices
		s.RoundTrips, s.ServerCPUMicrosPerDo, s.ServerCPU, s.Outcomes = c.RoundTrips, c.ServerCPUMicrosPerDo, c.ServerCPU, c.Outcomes
	}
	s.Sustainable = rate > 0 && s.Verdict == string(checker.VerdictOK) && lat.Measured > 0 &&
		s.P99Ms <= ms(sp.SLOP99) && s.ErrorRate <= sp.MaxErrorRate
	return s, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

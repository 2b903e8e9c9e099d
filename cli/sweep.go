package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/sweep"
)

// sweepCmd is `idembench sweep`: latency against load, per backend.
type sweepCmd struct {
	Backends    []string      `help:"Store backends to sweep, one curve each: memory, redis, postgres." default:"memory" sep:","`
	Engine      string        `help:"Engine to sweep (this binary: ${engines})." default:"idem" placeholder:"NAME"`
	Sink        string        `help:"Effect sink: plain, fenced or tx." default:"fenced" enum:"plain,fenced,tx"`
	Scenario    string        `help:"Traffic of every step: a built-in scenario or a YAML file (faults included, if it has any)." default:"capacity" placeholder:"NAME|FILE"`
	Clients     int           `help:"Concurrent clients, or open-loop workers (default: the scenario's)."`
	Step        time.Duration `help:"Length of each step (a run; long enough to settle)." default:"4s"`
	Steps       int           `help:"Open-loop steps, geometric from --lo to --hi times the closed-loop rate." default:"8"`
	Lo          float64       `help:"Lowest offered load, as a fraction of the closed-loop rate." default:"0.1"`
	Hi          float64       `help:"Highest offered load, as a fraction of the closed-loop rate." default:"1.5"`
	SLOP99      time.Duration `help:"Latency objective: the maximum sustainable rate is the highest achieved rate with p99 at most this." default:"50ms" name:"slo-p99"`
	Seed        int64         `help:"Seed of every step; 0 picks one (printed)."`
	RedisURL    string        `help:"Redis URL (default: $IDEM_REDIS_URL, else redis://127.0.0.1:6379/0)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL string        `help:"PostgreSQL URL (default: $IDEM_POSTGRES_URL, else the docker-compose.yml server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	Out         string        `help:"Directory for sweep.json, capacity.md and knee.png/.svg (default: ./idembench-out/sweep-<timestamp>)." placeholder:"DIR"`
}

func (c *sweepCmd) Run(ctx context.Context, std stdio, g *globals, reg *harness.Registry) error {
	eng, err := reg.Lookup(c.Engine)
	if err != nil {
		return usage("--engine: %v", err)
	}
	if c.Steps < 1 || c.Steps > 50 || c.Lo <= 0 || c.Hi <= c.Lo || c.Hi > 10 || c.Step < 500*time.Millisecond || c.Step > time.Hour || c.SLOP99 <= 0 || c.Clients < 0 {
		return usage("--steps must be 1..50, 0 < --lo < --hi ≤ 10, --step 500ms..1h, --slo-p99 positive, --clients not negative")
	}
	sp := sweep.Spec{Step: c.Step, Steps: c.Steps, Lo: c.Lo, Hi: c.Hi, SLOP99: c.SLOP99, Seed: harness.Seed(c.Seed)}
	for _, b := range c.Backends {
		backend, err := harness.ParseBackend(b)
		if err != nil {
			return usage("--backends: %q is not memory, redis or postgres", b)
		}
		if !eng.Supports(backend) {
			return usage("--engine %s does not run on %s", c.Engine, b)
		}
		u := resolveBackendURL(b, c.RedisURL, c.PostgresURL)
		hs := harness.Spec{Engine: eng, Backend: backend, URL: u.url, ScenarioName: c.Scenario, Sink: c.Sink, NoRecovery: c.Sink != "fenced"}
		hs.Overrides.Clients = c.Clients
		sp.Targets = append(sp.Targets, sweep.Target{Label: b + " · " + c.Sink, Spec: hs})
	}
	text := std.out
	if g.JSON {
		text = std.err
	}
	fmt.Fprintf(text, "idembench sweep: %s on %v · %d steps of %s from %.0f%% to %.0f%% of the closed-loop rate · objective p99 ≤ %s · seed %d\n",
		c.Engine, c.Backends, c.Steps, c.Step, 100*c.Lo, 100*c.Hi, c.SLOP99, sp.Seed)
	sp.Progress = func(target string, s sweep.Step) {
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
	res, err := sweep.Run(ctx, sp)
	if err != nil {
		return err
	}
	out := c.Out
	if out == "" {
		out = filepath.Join("idembench-out", "sweep-"+time.Now().Format("20060102-150405.000"))
	}
	md, err := sweep.Write(out, res)
	if err != nil {
		return usage("--out: %v", err)
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
	fmt.Fprintf(text, "sweep: %s (%s, %s, knee.png/.svg)\n", out, sweep.JSONFile, "capacity.md")
	if n := res.Violations(); n > 0 {
		return codeError(exitViolation, fmt.Sprintf("%d steps found a violation", n))
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/chaos/servers"
	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/scenarios"
)

// matrixCmd is `idembench matrix`: the safety matrix of VERIFICATION.md,
// run cell by cell, observed next to expected.
type matrixCmd struct {
	Quick        bool          `help:"Reduced matrix for CI (memory plus the server cells that matter, short runs; about a minute)."`
	Backends     []string      `help:"Backends to run: memory, redis, postgres." default:"memory,redis,postgres" enum:"memory,redis,postgres"`
	Seed         int64         `help:"Seed of every cell; 0 picks a fresh one (printed)."`
	Duration     time.Duration `help:"Traffic phase of each cell (default: the scenario's; 2s with --quick)."`
	Out          string        `help:"Write matrix.md and matrix.json to this directory." placeholder:"DIR"`
	RedisURL     string        `help:"Redis for the cells without a restart (default: a private server)." env:"IDEM_REDIS_URL" placeholder:"URL"`
	PostgresURL  string        `help:"PostgreSQL for the cells without a restart (default: a private server)." env:"IDEM_POSTGRES_URL" placeholder:"URL"`
	CheckTimeout time.Duration `help:"Linearizability budget of each cell's check." default:"30s"`
}

// Configurations (rows) and faults (columns) of the matrix.
const (
	cfgPlain     = "plain sink"
	cfgFenced    = "fenced sink"
	cfgRecovery  = "fenced sink + recovery"
	cfgTx        = "postgres tx mode"
	faultCrash   = "crash after effect"
	faultPause   = "pause past lease"
	faultDup     = "retries / duplicates"
	faultNet     = "network loss"
	faultRestart = "backend restart"
)

// Observed values of a cell besides safe and unsafe.
const (
	obsSafe         = "safe"
	obsUnsafe       = "unsafe"
	obsInconclusive = "inconclusive"
	obsNotRun       = "not run"
	obsError        = "error"
)

// matrixCell is one configuration × fault × backend run.
type matrixCell struct {
	Config   string `json:"config"`
	Backend  string `json:"backend"`
	Fault    string `json:"fault"`
	Variant  string `json:"variant,omitempty"` // "redis no persistence", "redis aof always"
	How      string `json:"how"`               // how the fault is injected
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	// Match is true when Observed equals Expected; a cell not run never
	// matches.
	Match bool `json:"match"`
	// ByChance marks an unsafe cell whose violation needs the fault to
	// hit a narrow window; Missed is set when this run found none (not
	// counted as a difference, not a pass either).
	ByChance   bool `json:"by_chance,omitempty"`
	Missed     bool `json:"missed,omitempty"`
	Violations int  `json:"violations"`
	// Faults is the number of fault windows recorded; Unknown the calls
	// that ended with an unknown outcome (ambiguous, never failed).
	Faults     int      `json:"faults"`
	Unknown    int      `json:"unknown"`
	Invariants []string `json:"invariants,omitempty"`
	Seed       int64    `json:"seed"`
	Note       string   `json:"note,omitempty"`
	Replay     string   `json:"replay,omitempty"`
	Seconds    float64  `json:"seconds"`

	scenario string
	sink     string
	recovery bool
	faults   func(d time.Duration) *backendFaults
	// workers > 0 runs the cell in that many worker processes: crashes
	// are SIGKILLs, pauses SIGSTOPs. duration overrides the matrix's.
	workers  int
	duration time.Duration
}

// sinkOf maps a configuration to --sink and --recovery.
func sinkOf(config string) (string, bool) {
	switch config {
	case cfgPlain:
		return "plain", false
	case cfgFenced:
		return "fenced", false
	case cfgRecovery:
		return "fenced", true
	}
	return "tx", false
}

// expected is the safety matrix of VERIFICATION.md, with its backend-restart
// column spelled out: Redis without persistence forgets completions (unsafe
// without transactional mode); Redis with AOF always and PostgreSQL keep
// every acknowledged write (safe).
func expected(config, fault, variant string) string {
	noRecovery := config == cfgPlain || config == cfgFenced
	switch fault {
	case faultCrash:
		if noRecovery {
			return obsUnsafe
		}
	case faultPause:
		// A SIGSTOP lands anywhere, also between the effect and the
		// completion: there it is a crash after the effect that the
		// successor does not see, and only recovery or a transaction
		// closes it. The in-process stall hook pauses before the effect
		// only, where fencing suffices.
		if config == cfgPlain || (config == cfgFenced && variant == "worker processes") {
			return obsUnsafe
		}
	case faultNet:
		// A completion lost on the wire after the effect is a crash after
		// the effect: without recovery the successor runs it again.
		if noRecovery {
			return obsUnsafe
		}
	case faultRestart:
		// Redis without persistence forgets completions. Any restart
		// also loses the completions in flight: the same window as a
		// crash after the effect.
		if variant == "redis no persistence" || noRecovery {
			return obsUnsafe
		}
	}
	return obsSafe
}

// byChance reports whether an unsafe cell's violation needs the fault to
// hit a narrow window (a completion in flight, a SIGSTOP between effect and
// completion): a run that finds none has missed, it has not refuted the
// theory. Deterministic unsafe cells (crash after effect, in-process
// pause, Redis losing its records) must always be caught.
func byChance(config, fault, variant string) bool {
	switch fault {
	case faultNet:
		return true
	case faultPause:
		return variant == "worker processes"
	case faultRestart:
		return variant != "redis no persistence"
	}
	return false
}

// privateServers are the servers a matrix starts for its restart cells.
type privateServers struct {
	redisNone, redisAOF *servers.Redis
	postgres            *servers.Postgres
}

func (p *privateServers) stop() {
	for _, r := range []*servers.Redis{p.redisNone, p.redisAOF} {
		if r != nil {
			_ = r.Stop()
		}
	}
	if p.postgres != nil {
		_ = p.postgres.Stop()
	}
}

// cells lists the matrix's cells.
func (c *matrixCmd) cells(ps *privateServers) []*matrixCell {
	want := map[string]bool{}
	for _, b := range c.Backends {
		want[b] = true
	}
	netFaults := func(d time.Duration) *backendFaults {
		frac := func(f float64) time.Duration { return time.Duration(f * float64(d)) }
		return &backendFaults{RetryTimeout: 300 * time.Millisecond, Net: []netWindow{
			{Fault: netfault.Fault{Kind: netfault.KindLatency, Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}, At: frac(0.1), For: frac(0.1)},
			{Fault: netfault.Fault{Kind: netfault.KindDropReplies}, At: frac(0.3), For: 400 * time.Millisecond},
			{Fault: netfault.Fault{Kind: netfault.KindReset}, At: frac(0.55), For: 100 * time.Millisecond},
			{Fault: netfault.Fault{Kind: netfault.KindPartition}, At: frac(0.7), For: 300 * time.Millisecond},
		}}
	}
	restarts := func(d time.Duration) []time.Duration {
		return []time.Duration{time.Duration(0.35 * float64(d)), time.Duration(0.7 * float64(d))}
	}
	var out []*matrixCell
	add := func(config, backend, fault, variant, how, scenario string, bf func(time.Duration) *backendFaults) {
		if !want[backend] {
			return
		}
		sink, rec := sinkOf(config)
		out = append(out, &matrixCell{Config: config, Backend: backend, Fault: fault, Variant: variant, How: how,
			Expected: expected(config, fault, variant), scenario: scenario, sink: sink, recovery: rec, faults: bf})
		c := out[len(out)-1]
		c.ByChance = c.Expected == obsUnsafe && byChance(config, fault, variant)
	}
	inProcess := func(config, backend string) {
		add(config, backend, faultCrash, "", "in-process crash hook", "crash-after-effect", nil)
		add(config, backend, faultPause, "", "in-process stall hook, heartbeat stopped", "gc-pause", nil)
		add(config, backend, faultDup, "", "concurrent + delayed copies, client retries", "duplicates", nil)
	}
	processes := func(config, backend string, crash, pause bool) {
		if crash {
			add(config, backend, faultCrash, "", "SIGKILL of a worker process at the crash point (4 workers), restarted", "crash-after-effect", nil)
			if want[backend] {
				out[len(out)-1].workers, out[len(out)-1].duration = 4, 3*time.Second
				out[len(out)-1].Variant = "worker processes"
			}
		}
		if pause {
			add(config, backend, faultPause, "", "SIGSTOP/SIGCONT of a worker process for 4 lease TTLs (4 workers)", "gc-pause", nil)
			if want[backend] {
				out[len(out)-1].workers, out[len(out)-1].duration = 4, 4*time.Second
				out[len(out)-1].Variant = "worker processes"
				out[len(out)-1].Expected = expected(config, faultPause, "worker processes")
				out[len(out)-1].ByChance = out[len(out)-1].Expected == obsUnsafe
			}
		}
	}
	netCell := func(config, backend string) {
		add(config, backend, faultNet, "", "toxiproxy: latency, drop replies after apply, reset, partition", "duplicates", netFaults)
	}
	redisRestart := func(config string, aof bool) {
		variant, srv := "redis no persistence", ps.redisNone
		if aof {
			variant, srv = "redis aof always", ps.redisAOF
		}
		add(config, backendRedis, faultRestart, variant, "SIGKILL + restart of a private redis-server, twice", "duplicates",
			func(d time.Duration) *backendFaults { return &backendFaults{Redis: srv, Restarts: restarts(d)} })
	}
	pgRestart := func(config string) {
		add(config, backendPostgres, faultRestart, "postgres", "immediate shutdown + restart of a private postgres, twice", "duplicates",
			func(d time.Duration) *backendFaults {
				return &backendFaults{Postgres: ps.postgres, Restarts: restarts(d)}
			})
	}
	if c.Quick {
		for _, cfg := range []string{cfgPlain, cfgFenced, cfgRecovery} {
			inProcess(cfg, backendMemory)
		}
		redisRestart(cfgPlain, false)
		redisRestart(cfgRecovery, false)
		redisRestart(cfgRecovery, true)
		netCell(cfgRecovery, backendRedis)
		inProcess(cfgTx, backendPostgres)
		netCell(cfgTx, backendPostgres)
		pgRestart(cfgTx)
		processes(cfgPlain, backendRedis, true, false)
		processes(cfgRecovery, backendRedis, false, true)
		processes(cfgTx, backendPostgres, true, false)
		return out
	}
	for _, cfg := range []string{cfgPlain, cfgFenced, cfgRecovery} {
		inProcess(cfg, backendMemory)
		for _, b := range []string{backendRedis, backendPostgres} {
			inProcess(cfg, b)
			processes(cfg, b, true, true)
			netCell(cfg, b)
		}
		redisRestart(cfg, false)
		redisRestart(cfg, true)
		pgRestart(cfg)
	}
	inProcess(cfgTx, backendPostgres)
	processes(cfgTx, backendPostgres, true, true)
	netCell(cfgTx, backendPostgres)
	pgRestart(cfgTx)
	return out
}

func (c *matrixCmd) Run(ctx context.Context, std stdio) error {
	seed := c.Seed
	if seed == 0 {
		seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	dur := c.Duration
	if dur == 0 && c.Quick {
		dur = 2 * time.Second
	}
	start := time.Now()
	fmt.Fprintf(std.out, "idembench matrix: seed %d%s\n", seed, map[bool]string{true: " · quick", false: ""}[c.Quick])
	ps, err := c.startServers(ctx)
	defer ps.stop()
	if err != nil {
		return envErr(err)
	}
	cells := c.cells(ps)
	for i, cell := range cells {
		if ctx.Err() != nil {
			cell.Observed, cell.Note = obsNotRun, "interrupted"
			continue
		}
		c.runCell(ctx, cell, ps, seed, dur)
		fmt.Fprintf(std.out, "[%2d/%d] %-24s %-8s %-21s %-9s expected %-6s observed %-12s %s\n", i+1, len(cells),
			cell.Config, cell.Backend, cell.Fault, short(cell.Variant), cell.Expected, cell.Observed, mark(cell))
	}
	fmt.Fprintln(std.out)
	writeMatrixText(std.out, cells)
	fmt.Fprintf(std.out, "seed: %d · %d cells in %s\n", seed, len(cells), time.Since(start).Round(time.Second))
	if c.Out != "" {
		if err := writeMatrixFiles(c.Out, seed, c.Quick, cells); err != nil {
			return usageErr("--out: %v", err)
		}
		fmt.Fprintf(std.out, "written: %s, %s\n", filepath.Join(c.Out, "matrix.md"), filepath.Join(c.Out, "matrix.json"))
	}
	differ, errs := 0, 0
	for _, cell := range cells {
		switch {
		case cell.Observed == obsError:
			errs++
		case cell.Observed != obsNotRun && !cell.Match && !cell.Missed:
			differ++
		}
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case differ > 0:
		return &exitError{code: exitViolation, err: fmt.Errorf("%d cells differ from the expected matrix", differ)}
	case errs > 0:
		return envErr(fmt.Errorf("%d cells could not run", errs))
	}
	return nil
}

func short(v string) string {
	switch v {
	case "redis no persistence":
		return "no-pers"
	case "redis aof always":
		return "aof"
	case "worker processes":
		return "procs"
	}
	return ""
}

func mark(c *matrixCell) string {
	switch {
	case c.Observed == obsNotRun:
		return "(not run: " + c.Note + ")"
	case c.Match:
		return "ok"
	case c.Missed:
		return "missed: " + c.Note
	}
	return "DIFFERS " + c.Note
}

// startServers starts the private servers the restart cells crash (and
// the other server cells use when no URL is given).
func (c *matrixCmd) startServers(ctx context.Context) (*privateServers, error) {
	ps := &privateServers{}
	var err error
	for _, b := range c.Backends {
		switch b {
		case backendRedis:
			if ps.redisNone, err = servers.StartRedis(ctx, servers.RedisOptions{Persistence: servers.None}); err != nil {
				return ps, err
			}
			if ps.redisAOF, err = servers.StartRedis(ctx, servers.RedisOptions{Persistence: servers.AOFAlways}); err != nil {
				return ps, err
			}
		case backendPostgres:
			if ps.postgres, err = servers.StartPostgres(ctx, servers.PostgresOptions{}); err != nil {
				return ps, err
			}
		}
	}
	return ps, nil
}

// runCell runs one cell and fills in what it observed.
func (c *matrixCmd) runCell(ctx context.Context, cell *matrixCell, ps *privateServers, seed int64, dur time.Duration) {
	t0 := time.Now()
	defer func() { cell.Seconds = time.Since(t0).Round(10 * time.Millisecond).Seconds() }()
	cell.Seed = seed
	sc, err := scenarios.Load(cell.scenario)
	if err != nil {
		cell.Observed, cell.Note = obsError, err.Error()
		return
	}
	sp := runSpec{
		Scenario: sc, ScenarioArg: cell.scenario,
		Backend: cell.Backend, Engine: engineIdem, Sink: cell.sink, Recovery: cell.recovery,
		Seed: seed, Duration: dur, Rate: -1, CheckTimeout: c.CheckTimeout,
		RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
	}
	d := dur
	if d == 0 {
		d = sc.Duration
	}
	if cell.faults != nil {
		sp.BackendFaults = cell.faults(d)
	}
	if bf := sp.BackendFaults; bf == nil || (bf.Redis == nil && bf.Postgres == nil) {
		// Cells without a restart use the configured server, else a
		// private one.
		if cell.Backend == backendRedis && sp.RedisURL == "" && ps.redisNone != nil {
			sp.RedisURL = ps.redisNone.URL()
		}
		if cell.Backend == backendPostgres && sp.PostgresURL == "" && ps.postgres != nil {
			sp.PostgresURL = ps.postgres.URL()
		}
	}
	var o *runOutcome
	if cell.workers > 0 {
		if cell.duration > 0 && dur == 0 || cell.duration > dur {
			sp.Duration = cell.duration
		}
		o, err = executeWorkers(ctx, sp, cell.workers)
	} else {
		o, err = execute(ctx, sp)
	}
	if err != nil {
		cell.Observed, cell.Note = obsError, err.Error()
		if ctx.Err() != nil {
			cell.Observed, cell.Note = obsNotRun, "interrupted"
		}
		return
	}
	cell.Replay = o.Replay
	cell.Faults, cell.Unknown = o.Summary.Counts.Faults, o.Summary.Outcomes["unknown"]
	switch o.Report.Verdict {
	case checker.VerdictOK:
		cell.Observed = obsSafe
	case checker.VerdictViolation:
		cell.Observed = obsUnsafe
	default:
		cell.Observed = obsInconclusive
	}
	for _, ir := range o.Report.Invariants {
		if ir.Violations > 0 {
			cell.Violations += ir.Violations
			cell.Invariants = append(cell.Invariants, fmt.Sprintf("%s×%d", ir.Invariant, ir.Violations))
		}
	}
	cell.Match = cell.Observed == cell.Expected
	switch {
	case !cell.Match && cell.ByChance && cell.Observed == obsSafe:
		cell.Missed, cell.Note = true, "the fault did not hit the effect-to-completion window this run"
	case !cell.Match:
		cell.Note = fmt.Sprintf("(%s)", strings.Join(cell.Invariants, " "))
	}
}

// writeMatrixText prints the matrix as an aligned table.
func writeMatrixText(w io.Writer, cells []*matrixCell) {
	fmt.Fprintf(w, "%-24s %-8s %-21s %-21s %-8s %-12s %-6s %6s %7s  %s\n", "configuration", "backend", "fault", "variant", "expected", "observed", "match", "faults", "unknown", "violations")
	for _, c := range cells {
		m := "yes"
		switch {
		case c.Observed == obsNotRun:
			m = "-"
		case c.Missed:
			m = "missed"
		case !c.Match:
			m = "NO"
		}
		fmt.Fprintf(w, "%-24s %-8s %-21s %-21s %-8s %-12s %-6s %6d %7d  %s\n", c.Config, c.Backend, c.Fault, c.Variant, c.Expected, c.Observed, m, c.Faults, c.Unknown, strings.Join(c.Invariants, " "))
	}
}

// writeMatrixFiles writes dir/matrix.md and dir/matrix.json.
func writeMatrixFiles(dir string, seed int64, quick bool, cells []*matrixCell) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# idembench safety matrix\n\nSeed %d%s. \"unsafe\" means the harness must find a violation. A cell marked *not run* is not a pass.\n\n", seed, map[bool]string{true: " (--quick)", false: ""}[quick])
	b.WriteString("| configuration | backend | fault | variant | injected by | expected | observed | match | faults | unknown calls | violations |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		m := "yes"
		switch {
		case c.Observed == obsNotRun:
			m = "—"
		case c.Missed:
			m = "missed (by chance)"
		case !c.Match:
			m = "**NO**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", c.Config, c.Backend, c.Fault, c.Variant, c.How, c.Expected, c.Observed, m, c.Faults, c.Unknown, strings.Join(c.Invariants, " "))
	}
	if err := os.WriteFile(filepath.Join(dir, "matrix.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		Seed  int64         `json:"seed"`
		Quick bool          `json:"quick"`
		Cells []*matrixCell `json:"cells"`
	}{seed, quick, cells}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "matrix.json"), append(js, '\n'), 0o644)
}

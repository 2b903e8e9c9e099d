package harness

import (
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/reports"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// Spec is one run. The zero value plus an Engine runs the built-in
// scenario "default" on the memory backend with the safe configuration
// (fenced sink, recovery on), a fresh seed, and writes nothing.
type Spec struct {
	// Engine is the store under test. Required (Engine.Open).
	Engine StoreFactory
	// Backend is the server kind; empty means Memory. URL is the server
	// for Redis and Postgres (required there).
	Backend Backend
	URL     string
	// Scenario is the scenario to run; when nil, ScenarioName is loaded
	// (a built-in name or a YAML file path; empty means "default").
	// ScenarioName also appears in the replay command.
	Scenario     *scenarios.Scenario
	ScenarioName string
	// Sink is the effect sink: workload.SinkPlain, SinkFenced or SinkTx
	// (the engine's transactional mode); empty means SinkFenced.
	Sink string
	// NoRecovery leaves out the engine's recovery hook (on by default; it
	// needs the fenced sink).
	NoRecovery bool
	// Overrides replace the scenario's figures.
	Overrides Overrides
	// Faults are the faults on the backend (restarts, network); nil means
	// none. Network faults need a proxy the program links: import
	// chaos/backendfault/netproxy (the CLI does), else the run is a
	// configuration error (backendfault.ErrNoProxy).
	Faults *backendfault.Plan
	// Out is the run directory (history.jsonl, summary.json, reports,
	// violations/); empty writes nothing. The plots are written when the
	// program links reports/plots (the CLI does).
	Out string
	// History is what Out keeps of the history: all of it (the zero
	// value), a sample of the keys, or none (HistoryMode).
	History HistoryMode
	// Progress, when set, is shown the run's figures while it runs.
	Progress Progress
	// CheckTimeout is the checker's linearizability budget; zero means
	// the checker's default.
	CheckTimeout time.Duration
	// Thresholds are the performance limits; Outcome.Summary says which
	// were missed.
	Thresholds reports.Thresholds
	// Clock is the stores' clock (Env.Clock); nil means the wall clock.
	Clock idem.Clock
	// Tool names the program in the history header; empty means
	// "idembench".
	Tool string
	// Program is the command that starts idembench at the head of the
	// replay command ("go run ./cmd/idembench", "./bin/idembench");
	// empty means "idembench".
	Program string
	// KeepData keeps the run's keys and rows on a persistent backend;
	// by default the engine's Purge deletes them at the end of the run.
	KeepData bool
}

// Overrides replace figures of the scenario. A zero field keeps the
// scenario's.
type Overrides struct {
	// Duration is the length of the traffic phase.
	Duration time.Duration
	// Clients is the number of concurrent clients.
	Clients int
	// Rate, when positive, makes the run open loop at this many requests
	// per second; ClosedLoop makes it closed loop.
	Rate       float64
	ClosedLoop bool
	// Seed fixes the workload and the fault schedule: 0 to MaxSeed, zero
	// picking a fresh one (Outcome.Seed says which).
	Seed int64
}

// LiveStats are a running workload's figures.
type LiveStats struct {
	// Ops counts the recorded operations so far: calls, effects and
	// lease operations.
	Ops int
	// Calls counts the calls recorded so far.
	Calls int
	// Effects counts the effect attempts the sink saw (applied or
	// rejected); zero when the sink's ledger is read only after the run.
	Effects int
	// Doubled counts keys with more than one applied effect so far.
	Doubled int
}

// Progress is shown a run while it runs (the CLI's progress line).
type Progress interface {
	// Latency returns the histogram the clients should observe their calls
	// into (workload.Config.Live), or nil.
	Latency() *workload.LiveLatency
	// Watch starts showing a traffic phase of the given length; sample
	// returns the figures so far. The harness calls stop when the workload
	// has ended.
	Watch(sample func() LiveStats, traffic time.Duration) (stop func())
}

// MaxSeed bounds a seed a caller chooses (0 to MaxSeed; zero picks one):
// every seed is then exact in JSON, whatever reads summary.json.
const MaxSeed = 1<<53 - 1

// CheckSeed returns an error wrapping ErrConfig when seed is negative or
// above MaxSeed.
func CheckSeed(seed int64) error {
	if seed < 0 || seed > MaxSeed {
		return ConfigError("seed %d is not between 0 and %d (2^53-1; 0 picks one)", seed, int64(MaxSeed))
	}
	return nil
}

// Seed returns seed, or a fresh one when seed is zero: positive, below
// 2^53 (exact in JSON). It is the one place seeds are picked.
func Seed(seed int64) int64 {
	if seed != 0 {
		return seed
	}
	return time.Now().UnixNano() & (1<<53 - 1)
}

// runPrefix returns the key prefix of a run on a persistent backend: the
// start time and the seed, so that runs never share a key
// (ParseRunPrefix reads it back).
func runPrefix(seed int64) string {
	return "r" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.FormatUint(uint64(seed), 36)
}

// ParseRunPrefix returns the run prefix a key of a run on a persistent
// backend starts with ("r<start ms, base 36>-<seed, base 36>") and the
// time the run started; ok is false for a key no run made.
func ParseRunPrefix(key string) (prefix string, start time.Time, ok bool) {
	if !strings.HasPrefix(key, "r") {
		return "", time.Time{}, false
	}
	parts := strings.SplitN(key[1:], "-", 3)
	if len(parts) < 2 {
		return "", time.Time{}, false
	}
	ms, err1 := strconv.ParseInt(parts[0], 36, 64)
	_, err2 := strconv.ParseUint(parts[1], 36, 64)
	if err1 != nil || err2 != nil || ms <= 0 {
		return "", time.Time{}, false
	}
	return "r" + parts[0] + "-" + parts[1], time.UnixMilli(ms), true
}

// WorkloadConfig returns the workload of sc with o applied: the one place
// where overrides meet a scenario. The seed is o.Seed as given.
func WorkloadConfig(sc *scenarios.Scenario, o Overrides) workload.Config {
	cfg := sc.Workload(o.Duration)
	cfg.Seed = o.Seed
	if o.Clients > 0 {
		cfg.Clients = o.Clients
	}
	switch {
	case o.ClosedLoop:
		cfg.Rate = 0
	case o.Rate > 0:
		cfg.Rate = o.Rate
	}
	if cfg.Clients == 0 {
		cfg.Clients = workload.DefaultClients
	}
	return cfg
}

// RedactURL hides the password of a connection URL.
func RedactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Package matrix is the safety matrix of docs/design/verification.md as data: every
// configuration × fault × backend cell with the verdict the theory
// expects, and a runner that runs each cell through the harness and puts
// the observed verdict next to the expected one.
package matrix

import (
	"time"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/harness"
)

// Config is a row of the matrix: how the effect is protected.
type Config string

// The configurations.
const (
	Plain    Config = "plain sink"
	Fenced   Config = "fenced sink"
	Recovery Config = "fenced sink + recovery"
	Tx       Config = "postgres tx mode"
)

// Fault is a column of the matrix.
type Fault string

// The faults.
const (
	Crash   Fault = "crash after effect"
	Pause   Fault = "pause past lease"
	Dup     Fault = "retries / duplicates"
	Net     Fault = "network loss"
	Restart Fault = "backend restart"
	// Failover kills the primary of a replicated topology right after a
	// completion was recorded (before the reply reached the client) and
	// promotes a replica.
	Failover Fault = "failover"
)

// Variants of a cell beyond its backend.
const (
	Processes     = "worker processes"
	RedisNone     = "redis no persistence"
	RedisAOF      = "redis aof always"
	PostgresCrash = "postgres"
)

// Verdicts a cell expects or observes.
const (
	Safe         = "safe"
	Unsafe       = "unsafe"
	Inconclusive = "inconclusive"
	NotRun       = "not run"
	Error        = "error"
)

// Cell is one configuration × fault × backend run.
type Cell struct {
	Config   Config          `json:"config"`
	Backend  harness.Backend `json:"backend"`
	Fault    Fault           `json:"fault"`
	Variant  string          `json:"variant,omitempty"`
	How      string          `json:"how"` // how the fault is injected
	Expected string          `json:"expected"`
	Observed string          `json:"observed"`
	// Match is true when Observed equals Expected; a cell not run never
	// matches.
	Match bool `json:"match"`
	// ByChance marks an unsafe cell whose violation needs the fault to
	// hit a narrow window; Missed is set when this run found none, which
	// is a difference all the same (Differs).
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
	faults   func(d time.Duration) *backendfault.Plan
	// workers > 0 runs the cell in that many worker processes: crashes
	// are SIGKILLs, pauses SIGSTOPs. duration overrides the matrix's.
	workers  int
	duration time.Duration
	// failover, when set, runs the cell's store on a fresh topology of
	// this kind, failed over once, aimed (backendfault.Failover).
	failover backendfault.FailoverKind
}

// Status is the one word that says how the cell came out: "yes" (observed
// as expected), "missed" (an unsafe cell whose narrow window the fault did
// not hit), "NO" (differs), or "-" (not run).
func (c *Cell) Status() string {
	switch {
	case c.Observed == NotRun:
		return "-"
	case c.Missed:
		return "missed"
	case !c.Match:
		return "NO"
	}
	return "yes"
}

// Differs reports whether the cell ran and differs from the theory. An
// unsafe cell that was not found differs too, even one whose window is
// narrow (ByChance): a matrix that misses a flaw it claims to test fails.
func (c *Cell) Differs() bool {
	s := c.Status()
	return (s == "NO" || s == "missed") && c.Observed != Error
}

// sink maps a configuration to the harness's sink and recovery.
func (c Config) sink() (sink string, noRecovery bool) {
	switch c {
	case Plain:
		return "plain", true
	case Fenced:
		return "fenced", true
	case Recovery:
		return "fenced", false
	}
	return "tx", true
}

package checker

import (
	"time"

	"github.com/idembench/idembench/history"
)

// Verdict is the overall result of a check.
type Verdict string

// The verdicts. The CLI maps them to exit codes 0, 1 and 3.
const (
	// VerdictOK: every invariant was checked on every key and none is
	// violated.
	VerdictOK Verdict = "ok"
	// VerdictViolation: at least one invariant is violated; see
	// Report.Violations.
	VerdictViolation Verdict = "violation"
	// VerdictInconclusive: no violation was found, but the
	// linearizability check did not finish for some key (timeout), the
	// history is invalid, or it holds no calls. It never stands for OK.
	VerdictInconclusive Verdict = "inconclusive"
)

// Invariant identifies one of the invariants of docs/design/verification.md.
type Invariant string

// The invariants, in report order.
const (
	I1AtMostOnce        Invariant = "I1" // per key, at most one applied effect
	I2NoPhantomSuccess  Invariant = "I2" // every success has an applied effect behind it
	I3ReplayConsistency Invariant = "I3" // every response returned for a key is the same
	I4Linearizable      Invariant = "I4" // the key's history is linearizable against the key model
	I5Fencing           Invariant = "I5" // no effect or completion accepted with a lower token after a higher one
	I6Liveness          Invariant = "I6" // no end-of-run probe found its key stuck
	I7TokenOrder        Invariant = "I7" // every lease granted for a key carries a higher token than those granted before it
	I8NoSupersededWrite Invariant = "I8" // no write accepted under a superseded token; no failure stored for a stale-rejected effect
)

// Invariants lists every invariant in report order.
var Invariants = []Invariant{I1AtMostOnce, I2NoPhantomSuccess, I3ReplayConsistency, I4Linearizable, I5Fencing, I6Liveness,
	I7TokenOrder, I8NoSupersededWrite, I9UncertainHeld}

var invariantNames = map[Invariant]string{
	I1AtMostOnce:        "at-most-once",
	I2NoPhantomSuccess:  "no phantom success",
	I3ReplayConsistency: "replay consistency",
	I4Linearizable:      "linearizable key",
	I5Fencing:           "fencing",
	I6Liveness:          "liveness",
	I7TokenOrder:        "token order",
	I8NoSupersededWrite: "no superseded write",
	I9UncertainHeld:     "uncertain held",
}

// Name returns the short English name of inv ("at-most-once"), or "" for an
// unknown id.
func (inv Invariant) Name() string { return invariantNames[inv] }

// OpRef is an operation involved in a violation: a copy of the op and its
// index in History.Ops.
type OpRef struct {
	Index int        `json:"index"`
	Op    history.Op `json:"op"`
}

// Violation is one broken invariant on one key.
type Violation struct {
	Invariant Invariant `json:"invariant"`
	Key       string    `json:"key"`
	// Message says what is wrong in one sentence, naming tokens, outcomes
	// and responses.
	Message string `json:"message"`
	// Ops are the operations that show the violation (capped at a few
	// dozen), in Call order; each carries its times, token, worker and
	// client.
	Ops []OpRef `json:"ops"`
	// VisualizationPath is the Porcupine HTML file written for this key
	// (I4 only, and only when Options.VisualizeDir is set); empty otherwise.
	VisualizationPath string `json:"visualization,omitempty"`
}

// InvariantResult summarizes one invariant over the whole history.
type InvariantResult struct {
	Invariant Invariant `json:"invariant"`
	// Checked counts what was checked: keys (lives of a key's record, when
	// retention split it) for I1, I3 and I4, keys for I5, success calls for
	// I2, probes for I6, lease grants for I7, accepted lease writes and
	// stored failures for I8. For I4 it counts keys decided (legal or
	// not); keys left undecided are in Inconclusive, and keys with nothing
	// to check (only no-op calls) in neither.
	Checked int `json:"checked"`
	// Violations counts every violation found, including those left out of
	// Report.Violations by Options.MaxViolations.
	Violations int `json:"violations"`
	// Inconclusive counts keys whose check did not finish (I4 timeouts).
	Inconclusive int `json:"inconclusive,omitempty"`
}

// Stats describes the checked history and the cost of checking it.
type Stats struct {
	Ops     int `json:"ops"`
	Calls   int `json:"calls"`
	Effects int `json:"effects"`
	Faults  int `json:"faults"`
	// Leases counts lease ops (grants, renewals, writes) from the engine's
	// observer; zero means I7 and I8 had nothing to check but the stored
	// failures of the calls.
	Leases int `json:"leases"`
	Probes int `json:"probes"`
	Keys   int `json:"keys"`
	// UnknownCalls counts calls with an Unknown outcome.
	UnknownCalls int `json:"unknown_calls"`
	// UnresolvedEffects counts effects still Unknown (their ack was lost and
	// the ledger was not consulted): they are treated as maybe-applied.
	UnresolvedEffects int `json:"unresolved_effects"`
	// SearchedKeys counts keys that needed Porcupine's search; the other
	// keys had a single possible order and were checked directly.
	SearchedKeys int `json:"searched_keys"`
	// Duration is the wall time of Check; LinearizabilityDuration the part
	// spent on I4.
	Duration                time.Duration `json:"duration"`
	LinearizabilityDuration time.Duration `json:"linearizability_duration"`
}

// Report is the result of Check.
type Report struct {
	Verdict Verdict `json:"verdict"`
	// Header is the checked history's header (scenario, seed, backend...),
	// so a report can name the run and how to replay it.
	Header history.Header `json:"header"`
	// Violations lists violations ordered by invariant, then by the key's
	// first appearance in the history; at most Options.MaxViolations per
	// invariant (InvariantResult.Violations has the full count).
	Violations []Violation `json:"violations"`
	// Invariants has one entry per invariant, in the order of Invariants.
	Invariants []InvariantResult `json:"invariants"`
	// InconclusiveKeys lists keys whose I4 check timed out or was not
	// started before the budget ran out (at most Options.MaxViolations).
	InconclusiveKeys []string `json:"inconclusive_keys,omitempty"`
	// Notes are remarks that do not change the verdict on their own but
	// that a reader must see: no probes recorded, unresolved effects,
	// visualizations that could not be written, an invalid history.
	Notes []string `json:"notes,omitempty"`
	Stats Stats    `json:"stats"`
}

// Result returns the InvariantResult for inv; the zero value if inv is not
// one of Invariants.
func (r *Report) Result(inv Invariant) InvariantResult {
	for _, ir := range r.Invariants {
		if ir.Invariant == inv {
			return ir
		}
	}
	return InvariantResult{}
}

// Violated returns the distinct invariants violated, in report order.
func (r *Report) Violated() []Invariant {
	var out []Invariant
	for _, ir := range r.Invariants {
		if ir.Violations > 0 {
			out = append(out, ir.Invariant)
		}
	}
	return out
}

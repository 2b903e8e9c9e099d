package history

import (
	"fmt"
	"time"
)

// Format is the value of Header.Format; Decode rejects any other, so a file
// that is not a history is refused on its first line.
const Format = "idembench-history"

// FormatVersion is the encoding version Encode writes and the only one
// Decode accepts.
const FormatVersion = 1

// Header describes the run a History records. Only Format and Version are
// checked; every other field is informational and is carried into reports so
// a run can be replayed.
type Header struct {
	// Format is always the constant Format. Encode fills it in when empty.
	Format string `json:"format"`
	// Version is the encoding version, FormatVersion. Encode fills it in
	// when zero.
	Version int `json:"version"`
	// Tool names the program and its version, for example "idembench v0.3.0".
	Tool string `json:"tool,omitempty"`
	// Scenario is the name of the scenario that ran.
	Scenario string `json:"scenario,omitempty"`
	// Seed reproduces the workload and the fault schedule.
	Seed int64 `json:"seed"`
	// Backend names the store ("memstore", "redis", "postgres", "naive/...").
	Backend string `json:"backend,omitempty"`
	// Engine describes the engine configuration ("fenced+recovery").
	Engine string `json:"engine,omitempty"`
	// Options holds the remaining engine and workload options as text.
	Options map[string]string `json:"options,omitempty"`
	// Start is the wall-clock start of the run. It is informational only:
	// ops are ordered by the monotonic timeline, never by wall time.
	Start time.Time `json:"start"`
	// LeaseTTL is the engine's lease duration; the liveness probe runs at
	// least one LeaseTTL after the last fault healed.
	LeaseTTL time.Duration `json:"lease_ttl,omitempty"`
	// Retention is how long the engine keeps a completed or failed record;
	// zero means unknown (the checker then assumes records outlive the
	// run). A key executed again after its record expired is a new key
	// for the checker, not a double execution.
	Retention time.Duration `json:"retention,omitempty"`
	// Clock names the timeline the timestamps come from (see ClockName).
	Clock string `json:"clock,omitempty"`
	// Process identifies the worker process that wrote this stream in a
	// multi-process run; 0 for a single-process run or a merged history.
	Process int `json:"process,omitempty"`
	// Clocks are the clock errors of the hosts of a run timed by several
	// clocks (see ClockBound); the checker widens their ops' intervals by
	// them. Empty when one clock timed every op.
	Clocks []ClockBound `json:"clocks,omitempty"`
}

// History is a recorded run: its Header and its Ops, sorted by Call when
// produced by a Recorder, Decode or Merge. Checkers do not rely on the order.
type History struct {
	Header Header
	Ops    []Op
}

// Validate reports the first invalid operation, naming its index, or an
// unsupported header. A nil History is invalid.
func (h *History) Validate() error {
	if h == nil {
		return fmt.Errorf("history: nil history")
	}
	if err := h.Header.validate(); err != nil {
		return err
	}
	for i := range h.Ops {
		if err := h.Ops[i].Validate(); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return nil
}

// validate accepts an empty Format and a zero Version (an in-memory header
// that Encode would fill in) and otherwise only the current format.
func (hd *Header) validate() error {
	if hd.Format != "" && hd.Format != Format {
		return fmt.Errorf("history: header format %q, want %q", hd.Format, Format)
	}
	if hd.Version != 0 && hd.Version != FormatVersion {
		return fmt.Errorf("history: unsupported format version %d (this build reads version %d)", hd.Version, FormatVersion)
	}
	for i := range hd.Clocks {
		if err := hd.Clocks[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

// Counts returns how many call, effect and fault ops h holds (lease ops
// are not counted).
func (h *History) Counts() (calls, effects, faults int) {
	for i := range h.Ops {
		switch h.Ops[i].Kind {
		case KindCall:
			calls++
		case KindEffect:
			effects++
		case KindFault:
			faults++
		}
	}
	return calls, effects, faults
}

// ResolveEffects settles effects whose outcome is Unknown by asking lookup,
// which reads the ledger after the run: lookup reports whether that effect
// was applied and whether the ledger knows (ok). Resolved effects get
// OutcomeNone and the Applied flag from the ledger; their Return stays as
// recorded (NoReturn when the acknowledgement was lost), since the ledger
// does not say when the apply happened. It returns how many effects were
// resolved and how many stay Unknown. A nil lookup resolves nothing.
func (h *History) ResolveEffects(lookup func(op *Op) (applied, ok bool)) (resolved, unresolved int) {
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != KindEffect || op.Outcome != Unknown {
			continue
		}
		if lookup != nil {
			if applied, ok := lookup(op); ok {
				op.Outcome = OutcomeNone
				op.Applied = applied
				resolved++
				continue
			}
		}
		unresolved++
	}
	return resolved, unresolved
}

package history

import (
	"errors"
	"fmt"
	"math"
)

// NoReturn is the Return of an operation whose end is unknown: a call that
// timed out or whose worker crashed, or an effect whose acknowledgement was
// lost. It orders after every real timestamp, so a linearizability checker
// may place the operation's effect at any point after its Call.
const NoReturn int64 = math.MaxInt64

// Kind says what an Op records. The zero Kind is invalid.
type Kind uint8

// The kinds of operation. A liveness probe is a KindCall with Probe set.
const (
	KindCall   Kind = 1 // one Engine.Do as the client saw it
	KindEffect Kind = 2 // one attempt of the business side effect, as the sink saw it
	KindFault  Kind = 3 // a fault window from Call to Return
	// KindLease (4, "lease") is declared in lease.go.
)

var kindNames = [...]string{KindCall: "call", KindEffect: "effect", KindFault: "fault", KindLease: "lease"}

// String returns "call", "effect", "fault", "lease" or "kind(N)".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MarshalText encodes k as its name; an invalid Kind is an error.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) || kindNames[k] == "" {
		return nil, fmt.Errorf("history: invalid kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText parses a name written by MarshalText; any other text is an
// error.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n != "" && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("history: unknown kind %q", b)
}

// Outcome is what a call returned to its client, or, for an effect, whether
// its acknowledgement is known. OutcomeNone (the zero value, encoded as an
// absent field) is the outcome of faults and of effects whose Applied flag
// is known.
type Outcome uint8

// The outcomes. Their JSON names are given in the comments.
const (
	OutcomeNone Outcome = iota // effects with a known result, faults
	// Executed ("executed"): this call ran the function and its Complete was
	// accepted; Resp is the stored response and Token the lease's token. The
	// response may come from the recovery path (the effect of a crashed
	// holder was found and its response stored).
	Executed
	// Replayed ("replayed"): a stored success was returned; Resp is it.
	Replayed
	// Failed ("failed"): a permanent failure is stored and Resp is the
	// failure response. Token != 0 means this call ran the function and
	// stored the failure; Token == 0 means it replayed a stored failure.
	Failed
	// InProgress ("in_progress"): HTTP 409, another holder had a live lease.
	InProgress
	// Mismatch ("mismatch"): HTTP 422, the key was used with another
	// fingerprint.
	Mismatch
	// Released ("released"): the function failed retryably and the lease
	// was released; nothing was stored.
	Released
	// LeaseLost ("lease_lost"): the execution lost its lease and its
	// Complete or Fail was refused by fencing. Its effect may have happened
	// and is recorded, if at all, by its own effect op.
	LeaseLost
	// Unknown ("unknown"): the outcome is ambiguous (timeout, crash,
	// ambiguous backend error). The call may or may not have taken effect.
	// For calls, Return should be NoReturn; checkers treat it as NoReturn
	// whatever was recorded. For effects, Applied is meaningless until the
	// op is resolved from the ledger.
	Unknown
	// Error ("error"): a local error that certainly did nothing (invalid
	// key, context cancelled before anything was sent).
	Error
	numOutcomes
)

var outcomeNames = [...]string{
	OutcomeNone: "",
	Executed:    "executed",
	Replayed:    "replayed",
	Failed:      "failed",
	InProgress:  "in_progress",
	Mismatch:    "mismatch",
	Released:    "released",
	LeaseLost:   "lease_lost",
	Unknown:     "unknown",
	Error:       "error",
}

// String returns the JSON name of o, "none" for OutcomeNone, or
// "outcome(N)" for an invalid value.
func (o Outcome) String() string {
	switch {
	case o == OutcomeNone:
		return "none"
	case o < numOutcomes:
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// MarshalText encodes o as its JSON name (empty for OutcomeNone); an
// invalid Outcome is an error.
func (o Outcome) MarshalText() ([]byte, error) {
	if o >= numOutcomes {
		return nil, fmt.Errorf("history: invalid outcome %d", uint8(o))
	}
	return []byte(outcomeNames[o]), nil
}

// UnmarshalText parses a JSON name written by MarshalText; the empty string
// is OutcomeNone and any unknown name is an error.
func (o *Outcome) UnmarshalText(b []byte) error {
	for i, n := range outcomeNames {
		if n == string(b) {
			*o = Outcome(i)
			return nil
		}
	}
	return fmt.Errorf("history: unknown outcome %q", b)
}

// ParseOutcome returns the Outcome whose JSON name is s.
func ParseOutcome(s string) (Outcome, error) {
	var o Outcome
	err := o.UnmarshalText([]byte(s))
	return o, err
}

// Success reports whether o is a success a client may act on: Executed or
// Replayed. A stored permanent failure (Failed) is not a success.
func (o Outcome) Success() bool { return o == Executed || o == Replayed }

// HasResponse reports whether a call with outcome o returned a stored
// response (Executed, Replayed, Failed): such calls must carry Resp.
func (o Outcome) HasResponse() bool { return o == Executed || o == Replayed || o == Failed }

// Op is one recorded operation. Which fields are meaningful depends on Kind;
// fields that do not apply are zero and are omitted from the JSON.
type Op struct {
	Kind Kind `json:"kind"`
	// Client is the id of the logical client that issued the request (calls)
	// or on whose behalf the effect ran (effects). For faults it is the
	// client the fault targets, or -1 for a fault that targets no client.
	Client int `json:"client"`
	// Worker is the id of the worker (goroutine or process) that ran it.
	Worker int `json:"worker"`
	// Key is the idempotency key. Faults that hit every key leave it empty.
	Key string `json:"key,omitempty"`
	// Request is the logical request id: every attempt (retry) of one
	// client request shares it.
	Request int64 `json:"req,omitempty"`
	// Attempt counts the attempts of Request, from 1.
	Attempt int `json:"attempt,omitempty"`
	// FP is a short id of the request fingerprint (FingerprintID). Two
	// calls with the same key and different FP must not be served the same
	// stored response; empty means unknown.
	FP string `json:"fp,omitempty"`
	// Call and Return are nanoseconds on the run's shared monotonic
	// timeline (see Now). Return is NoReturn when the end is unknown.
	Call   int64 `json:"call"`
	Return int64 `json:"ret"`
	// Intended is when an open-loop driver meant to send the request, on the
	// same timeline; 0 when the run is closed-loop. Latency is measured from
	// it, so a stalled driver does not hide its own delay.
	Intended int64 `json:"intended,omitempty"`
	// Outcome is what a call returned. Effects use OutcomeNone or Unknown;
	// faults use OutcomeNone.
	Outcome Outcome `json:"outcome,omitempty"`
	// Token is the fencing token: the executing lease's token for Executed
	// and first-execution Failed calls, the token the effect carried for
	// effects. Zero when none.
	Token uint64 `json:"token,omitempty"`
	// Resp is the hex digest of the response a call returned (RespDigest),
	// or any other string that is equal exactly when the responses are;
	// empty when none. Calls with Executed, Replayed or Failed must carry
	// it.
	Resp string `json:"resp,omitempty"`
	// Exec is the execution id of the attempt that ran the function, shared
	// by a call and the effects it attempted.
	Exec string `json:"exec,omitempty"`
	// Applied reports, for an effect with a known outcome, whether the sink
	// applied it (true) or rejected it, for example as fenced (false).
	Applied bool `json:"applied,omitempty"`
	// Probe marks a call made by the end-of-run liveness probe.
	Probe bool `json:"probe,omitempty"`
	// Fault is what a fault op did (FaultCrash, FaultPartition, ...);
	// empty on the other kinds, and on the fault ops of histories written
	// before kinds were recorded.
	Fault FaultKind `json:"fault,omitempty"`
	// Label describes a fault ("pause client 3", "crash after-effect"), or
	// annotates any op for humans.
	Label string `json:"label,omitempty"`
	// Err is the error text a call or effect saw, for humans only.
	Err string `json:"err,omitempty"`
	// Transition names the lease step of a KindLease op; empty for the
	// other kinds.
	Transition Transition `json:"transition,omitempty"`
	// PrevToken is, on a KindLease take-over, the token of the lease it
	// superseded; zero otherwise.
	PrevToken uint64 `json:"prev_token,omitempty"`
}

// Pending reports whether the op's end is unknown: an Unknown outcome or a
// Return of NoReturn.
func (op *Op) Pending() bool { return op.Outcome == Unknown || op.Return == NoReturn }

// Validate reports the first rule op breaks, or nil. The rules: Kind is
// valid; Return >= Call; calls carry a call outcome, and Executed, Replayed
// and Failed calls carry Resp; effects have OutcomeNone or Unknown and are
// not probes; faults have OutcomeNone, Applied false and Probe false; lease
// ops carry a known Transition, no outcome, and a PrevToken only on a
// take-over (or the recovery after one); only lease ops carry a Transition
// or a PrevToken; only fault ops carry a Fault kind, and it is one of
// FaultKinds (or empty, in an old history).
func (op *Op) Validate() error {
	if op.Return < op.Call {
		return fmt.Errorf("history: %s op returns at %d before its call at %d", op.Kind, op.Return, op.Call)
	}
	if op.Outcome >= numOutcomes {
		return fmt.Errorf("history: invalid outcome %d", uint8(op.Outcome))
	}
	if op.Kind != KindLease && (op.Transition != "" || op.PrevToken != 0) {
		return fmt.Errorf("history: %s op with a lease transition or prev_token", op.Kind)
	}
	if op.Kind != KindFault && op.Fault != "" {
		return fmt.Errorf("history: %s op with a fault kind", op.Kind)
	}
	switch op.Kind {
	case KindCall:
		if op.Outcome == OutcomeNone {
			return errors.New("history: call op without outcome")
		}
		if op.Applied {
			return errors.New("history: call op with applied set (only effects are applied)")
		}
		if op.Outcome.HasResponse() && op.Resp == "" {
			return fmt.Errorf("history: %s call op without resp", op.Outcome)
		}
	case KindEffect:
		if op.Outcome != OutcomeNone && op.Outcome != Unknown {
			return fmt.Errorf("history: effect op with outcome %s (want none or unknown)", op.Outcome)
		}
		if op.Probe {
			return errors.New("history: effect op marked as probe")
		}
	case KindFault:
		if op.Outcome != OutcomeNone || op.Applied || op.Probe {
			return errors.New("history: fault op with outcome, applied or probe set")
		}
		if op.Fault != "" && !op.Fault.Valid() {
			return fmt.Errorf("history: fault op of unknown kind %q (want %s)", op.Fault, JoinFaultKinds(FaultKinds))
		}
	case KindLease:
		return op.validateLease()
	default:
		return fmt.Errorf("history: invalid kind %d", uint8(op.Kind))
	}
	return nil
}

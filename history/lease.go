package history

import "fmt"

// KindLease is an op that records one step of a key's lease as the engine
// saw it (its observer hook): a grant, a renewal, an accepted or refused
// fenced write. Call and Return bracket the store call behind it; Token is
// the lease's fencing token, PrevToken the superseded holder's token on a
// take-over, Transition names the step, and Label the store call a
// lease_lost or backend_error step refers to ("complete", "heartbeat").
// Client, Worker and Exec say which call and execution it belongs to.
const KindLease Kind = 4

// Transition names one lease step (the engine's idem.Transition, by name,
// so that history does not import the engine). The zero value is not a
// valid transition.
type Transition string

// The transitions, with the names the engine's observer uses.
const (
	// TransitionAcquired: a lease was granted on an absent key (Token).
	TransitionAcquired Transition = "acquired"
	// TransitionTakenOver: a lease was granted over an expired one; PrevToken is
	// the superseded holder's token.
	TransitionTakenOver Transition = "taken_over"
	// TransitionReplayed: a stored record was returned (Token is its token).
	TransitionReplayed Transition = "replayed"
	// TransitionConflict: another holder had a live lease.
	TransitionConflict Transition = "conflict"
	// TransitionMismatch: the key is stored with another fingerprint.
	TransitionMismatch Transition = "mismatch"
	// TransitionHeartbeat: a renewal was accepted.
	TransitionHeartbeat Transition = "heartbeat"
	// TransitionHeartbeatRefused: a renewal was refused (or the store did not
	// answer for a whole lease TTL): the lease is lost.
	TransitionHeartbeatRefused Transition = "heartbeat_refused"
	// TransitionCompleted: Complete was accepted.
	TransitionCompleted Transition = "completed"
	// TransitionFailed: Fail was accepted: a permanent failure is stored.
	TransitionFailed Transition = "failed"
	// TransitionReleased: Release was accepted.
	TransitionReleased Transition = "released"
	// TransitionLeaseLost: Complete, Fail or Release was refused by
	// fencing (Label names the write).
	TransitionLeaseLost Transition = "lease_lost"
	// TransitionRecovered: after a take-over the recovery hook found the previous
	// holder's effect.
	TransitionRecovered Transition = "recovered"
	// TransitionBackendError: a store call failed (Label names it).
	TransitionBackendError Transition = "backend_error"
	// TransitionUncertain: the execution's outcome is unknown and the key
	// was recorded uncertain (Token): it must not run again until resolved.
	TransitionUncertain Transition = "uncertain"
	// TransitionResolved: an operator settled an uncertain key (Token).
	TransitionResolved Transition = "resolved"
)

var transitions = [...]Transition{TransitionAcquired, TransitionTakenOver, TransitionReplayed, TransitionConflict, TransitionMismatch,
	TransitionHeartbeat, TransitionHeartbeatRefused, TransitionCompleted, TransitionFailed, TransitionReleased, TransitionLeaseLost,
	TransitionRecovered, TransitionBackendError, TransitionUncertain, TransitionResolved}

// Valid reports whether t is one of the named transitions.
func (t Transition) Valid() bool {
	for _, v := range transitions {
		if t == v {
			return true
		}
	}
	return false
}

// Grant reports whether t grants a lease (acquired or taken_over).
func (t Transition) Grant() bool { return t == TransitionAcquired || t == TransitionTakenOver }

// AcceptedWrite reports whether t is a fenced write the store accepted:
// completed, failed, heartbeat or released.
func (t Transition) AcceptedWrite() bool {
	switch t {
	case TransitionCompleted, TransitionFailed, TransitionHeartbeat, TransitionReleased:
		return true
	}
	return false
}

// validateLease checks the fields of a KindLease op.
func (op *Op) validateLease() error {
	if !op.Transition.Valid() {
		return fmt.Errorf("history: lease op with unknown transition %q", op.Transition)
	}
	if op.Outcome != OutcomeNone || op.Applied || op.Probe {
		return fmt.Errorf("history: lease op with outcome, applied or probe set")
	}
	if op.PrevToken != 0 && op.Transition != TransitionTakenOver && op.Transition != TransitionRecovered {
		return fmt.Errorf("history: %s lease op with prev_token (only taken_over and recovered carry one)", op.Transition)
	}
	return nil
}

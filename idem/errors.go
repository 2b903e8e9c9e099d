package idem

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; every error the package
// returns wraps at most one of them.
var (
	// ErrInvalidKey reports a key that breaks the key rules (see ValidateKey).
	// HTTP: 400.
	ErrInvalidKey = errors.New("idem: invalid idempotency key")
	// ErrInProgress reports that another execution holds a live lease on the
	// key. HTTP: 409.
	ErrInProgress = errors.New("idem: request with this key is in progress")
	// ErrFingerprintMismatch reports that the key was first used with a
	// different request. HTTP: 422.
	ErrFingerprintMismatch = errors.New("idem: key reused with a different request")
	// ErrLeaseLost reports a fenced write that was refused because the record
	// no longer carries the caller's token: the lease expired and was taken
	// over, or the record is gone.
	ErrLeaseLost = errors.New("idem: lease lost")
	// ErrNotFound reports that no record exists for the key.
	ErrNotFound = errors.New("idem: record not found")
	// ErrResponseTooLarge reports a response above the configured size cap.
	ErrResponseTooLarge = errors.New("idem: response too large")
	// ErrCorruptRecord reports a stored record that cannot be decoded or
	// breaks the record invariants. It is never silently treated as absent.
	ErrCorruptRecord = errors.New("idem: corrupt stored record")
	// ErrBackend wraps a failure of the backend (unreachable, refused). The
	// engine fails closed on it: it never assumes the key is new.
	ErrBackend = errors.New("idem: backend error")
	// ErrUncertain reports a key whose execution may or may not have
	// performed its effect (StatusUncertain). The engine never runs the
	// function for it again on its own: an operator resolves it
	// (Engine.Resolve, idemctl resolve). A new key for the same request is
	// not safe either: it may perform the effect a second time. HTTP: 409
	// with reason operation_uncertain.
	ErrUncertain = errors.New("idem: outcome of the request with this key is uncertain")
	// ErrAborted is returned when a fault hook aborted an execution (a
	// simulated crash). The lease is left in place, as a crashed process
	// would leave it.
	ErrAborted = errors.New("idem: execution aborted by fault hook")
)

// ambiguousError marks an error whose operation may or may not have taken
// effect on the backend.
type ambiguousError struct{ err error }

func (e *ambiguousError) Error() string { return "ambiguous outcome: " + e.err.Error() }
func (e *ambiguousError) Unwrap() error { return e.err }

// MarkAmbiguous wraps err to say that the operation may have been applied by
// the backend (for example a timeout after the request was sent). A nil err
// stays nil. A Func returns it when it cannot tell whether its own side
// effect happened: Do then keeps the key in progress instead of releasing
// it, so the next attempt takes it over and the recovery hook decides.
func MarkAmbiguous(err error) error {
	if err == nil || Ambiguous(err) {
		return err
	}
	return &ambiguousError{err: err}
}

// Ambiguous reports whether err says that the outcome is unknown: the request
// may or may not have taken effect. Callers and the harness must treat such an
// outcome as unknown, never as failed.
func Ambiguous(err error) bool {
	var a *ambiguousError
	return errors.As(err, &a)
}

// BackendError wraps a backend failure so that errors.Is(err, ErrBackend)
// holds while the cause stays reachable through errors.Unwrap. op names the
// store operation ("acquire", "complete", ...). A nil err stays nil.
func BackendError(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, errors.Join(ErrBackend, err))
}

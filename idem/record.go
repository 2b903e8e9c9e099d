package idem

import (
	"fmt"
	"time"
)

// Status is the state of a stored key.
type Status uint8

// The states of a key. A key with no record is absent.
const (
	StatusInProgress Status = 1 // claimed; a lease holder is executing
	StatusCompleted  Status = 2 // finished; Response is replayed
	StatusFailed     Status = 3 // failed permanently; Response is replayed
	// StatusUncertain: the execution may or may not have performed its
	// effect. Never taken over, never replayed as a success: every request
	// for the key gets ErrUncertain until an operator resolves it (see
	// UncertainStore). Response is what the function returned, for the
	// operator.
	StatusUncertain Status = 4
)

// String returns "in_progress", "completed", "failed" or "status(N)".
func (s Status) String() string {
	switch s {
	case StatusInProgress:
		return "in_progress"
	case StatusCompleted:
		return "completed"
	case StatusFailed:
		return "failed"
	case StatusUncertain:
		return "uncertain"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ParseStatus is the inverse of Status.String for the four valid states.
// Anything else returns an error wrapping ErrCorruptRecord.
func ParseStatus(s string) (Status, error) {
	switch s {
	case "in_progress":
		return StatusInProgress, nil
	case "completed":
		return StatusCompleted, nil
	case "failed":
		return StatusFailed, nil
	case "uncertain":
		return StatusUncertain, nil
	}
	return 0, fmt.Errorf("%w: unknown status %q", ErrCorruptRecord, s)
}

// Token is a fencing token: strictly increasing per key across the whole life
// of a store, including after Release and after a record expired. Zero is
// never issued. The contract orders tokens per key only: two keys may be
// issued the same token, so code that needs a global identity of an
// execution pairs the token with the key. (The stores in this module happen
// to issue tokens unique across keys as well: one counter in memstore and
// pgstore, a counter per hash slot with the slot in the low bits in
// redisstore.)
type Token uint64

// MaxToken is the largest valid token, 2^63-1: every store keeps tokens in
// a signed 64-bit integer (a PostgreSQL bigint, a Redis integer), so a
// larger token cannot have been issued and a record carrying one is
// corrupt.
const MaxToken Token = 1<<63 - 1

// Record is the stored state of one key.
type Record struct {
	Key         string
	Status      Status
	Fingerprint Fingerprint
	// FingerprintPolicy is the id of the fingerprint policy Fingerprint
	// was computed under (Claim.Policy), as a PolicyStore keeps it; empty
	// when not named, for records stored before ids were kept and on
	// stores that keep none.
	FingerprintPolicy string
	// Token is the fencing token of the execution that owns (or owned) the
	// record.
	Token Token
	// LeaseExpiry is when the lease of an in-progress record ends, by the
	// backend's clock. Zero for completed, failed and uncertain records.
	LeaseExpiry time.Time
	// Response is set for completed, failed and uncertain records, nil
	// otherwise.
	Response *Response
	// ExpiresAt is when the record is deleted: for completed, failed and
	// uncertain records, the time of that write plus retention; for in-progress records, the
	// lease expiry plus the store's take-over grace period (a store option,
	// default 24h), so that a take-over after a crash is still recognised as
	// one (Lease.PrevToken) and the recovery hook runs.
	ExpiresAt time.Time
}

// Validate checks the record invariants and returns an error wrapping
// ErrCorruptRecord when one is broken. Backends call it on every record they
// decode.
func (r *Record) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: key %q: %s", ErrCorruptRecord, r.Key, fmt.Sprintf(format, args...))
	}
	if r.Token == 0 {
		return bad("fencing token is zero")
	}
	if r.Token > MaxToken {
		return bad("fencing token %d is above MaxToken", r.Token)
	}
	if err := ValidatePolicy(r.FingerprintPolicy); err != nil {
		return bad("%v", err)
	}
	switch r.Status {
	case StatusInProgress:
		if r.Response != nil {
			return bad("in-progress record carries a response")
		}
		if r.LeaseExpiry.IsZero() {
			return bad("in-progress record without lease expiry")
		}
	case StatusCompleted, StatusFailed, StatusUncertain:
		if r.Response == nil {
			return bad("%s record without response", r.Status)
		}
	default:
		return bad("unknown status %d", uint8(r.Status))
	}
	return nil
}

// LeaseLive reports whether r is in progress with a lease that has not
// expired at now.
func (r *Record) LeaseLive(now time.Time) bool {
	return r.Status == StatusInProgress && now.Before(r.LeaseExpiry)
}

package idem

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxPolicyLen is the longest fingerprint policy id, in bytes.
const MaxPolicyLen = 128

// maxPolicySwitches bounds how often one DoClaim claims again after
// switching between its own policy and a record's.
const maxPolicySwitches = 4

// ErrPolicyChanged reports a key stored under a fingerprint policy that the
// caller no longer knows (Claim.Prior does not know it): the request
// cannot be compared with the one that used the key, so it is neither
// replayed nor refused as a different request. The key is unusable until
// the record expires, or until the caller lists the policy again. HTTP:
// 409 with reason policy_changed.
var ErrPolicyChanged = errors.New("idem: key stored under a fingerprint policy this server no longer knows")

// ErrInvalidPolicy reports a fingerprint policy id that breaks the rules of
// ValidatePolicy. It is a configuration error: the store is not touched.
var ErrInvalidPolicy = errors.New("idem: invalid fingerprint policy id")

// ValidatePolicy checks a fingerprint policy id: at most MaxPolicyLen
// bytes of printable ASCII without spaces (0x21..0x7E), like a key. The
// empty id is valid: it means "not named" (the caller's default policy, or
// a record stored before policy ids were kept). The error wraps
// ErrInvalidPolicy.
func ValidatePolicy(policy string) error {
	if len(policy) > MaxPolicyLen {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidPolicy, len(policy), MaxPolicyLen)
	}
	for i := 0; i < len(policy); i++ {
		if c := policy[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: %s at offset %d", ErrInvalidPolicy, describeByte(c), i)
		}
	}
	return nil
}

// PolicyStore is implemented by stores that keep the fingerprint policy id
// with a record (Record.FingerprintPolicy), byte for byte. The engine finds
// it by type assertion when a claim names a policy (Engine.DoClaim); on a
// store without it the id is not kept and every record reads as stored
// under the empty id.
type PolicyStore interface {
	// AcquirePolicy is Acquire for a request fingerprinted under policy (a
	// valid id, see ValidatePolicy): a new record carries policy in
	// Record.FingerprintPolicy and Lease.FingerprintPolicy until it is
	// gone. A take-over keeps the id of the record it takes over, whatever
	// policy says (and Acquire's take-overs keep it too): the fingerprint
	// does not change, and the id says how it was computed. A record that
	// is there is returned unchanged, with its id. Acquire is
	// AcquirePolicy with "" for a new record.
	AcquirePolicy(ctx context.Context, key string, fp Fingerprint, policy string, leaseTTL time.Duration) (*Lease, *Record, error)
}

// Claim is what DoClaim knows of a request: its fingerprint under the
// current policy, that policy's id, and how to fingerprint it under the
// policies used before.
type Claim struct {
	// Fingerprint identifies the request under Policy.
	Fingerprint Fingerprint
	// Policy is the id of the fingerprint policy Fingerprint was computed
	// under ("payments/v2"), kept with a new record by a PolicyStore. It
	// should change whenever the policy does. Empty means not named.
	Policy string
	// Prior reports whether the caller knows the earlier policy named id
	// (known) and, if it does, whether the request's fingerprint under
	// that policy is stored, the fingerprint of the record (same). The
	// engine asks it when a key's record was stored under another policy
	// than Policy; an adapter that keeps several unnamed earlier policies
	// answers for id "" with any of them. Nil knows no earlier policy.
	Prior func(id string, stored Fingerprint) (known, same bool)
}

// DoClaim is DoScoped for a request described by c: the key's record is
// compared with the request under the policy it was stored with.
//
//   - A record stored under c.Policy, or with c.Fingerprint, is answered as
//     Do answers it (a different fingerprint is ErrFingerprintMismatch).
//   - A record stored under another policy P: if c.Prior knows P, the
//     request is compared under P and, when it is the same request there,
//     answered as Do would answer the stored fingerprint (replay, conflict, take-over of an expired lease, or
//     ErrFingerprintMismatch when the request differs under P too); the
//     record keeps P. If c.Prior does not know P, DoClaim returns
//     ErrPolicyChanged and runs nothing: neither a replay of what may be
//     another request's response, nor a claim of a mismatch it cannot
//     tell. A record stored under the empty id (before ids were kept, or
//     by a store that keeps none) is asked of c.Prior too, but when it is
//     unknown there it is answered as Do answers it, as before ids were
//     kept; so is a record whose id is c.Policy's, when that is empty too
//     (unnamed policies cannot be told apart, so c.Prior("") is asked).
//
// A c.Policy that breaks ValidatePolicy returns ErrInvalidPolicy without
// touching the store. On a store that does not implement PolicyStore
// policies are not kept: every record has the empty id.
func (e *Engine) DoClaim(ctx context.Context, scope, key string, c Claim, fn Func) (Result, error) {
	if err := ValidatePolicy(c.Policy); err != nil {
		return Result{}, err
	}
	k, err := StorageKey(key, e.cfg.scope, scope)
	if err != nil {
		return Result{}, err
	}
	return e.doClaim(ctx, k, key, c, fn)
}

// acquire claims storage key k for fp under policy: through the store's
// AcquirePolicy when policy is named and the store keeps it, else through
// the engine's Acquire path (which may coalesce).
func (e *Engine) acquire(ctx context.Context, k string, fp Fingerprint, policy string) (*Lease, *Record, error) {
	if policy != "" {
		if ps, ok := e.store.(PolicyStore); ok {
			return ps.AcquirePolicy(ctx, k, fp, policy, e.cfg.leaseTTL)
		}
	}
	return e.ops.Acquire(ctx, k, fp, e.cfg.leaseTTL)
}

// underStoredPolicy decides a claim that met rec, a record whose
// fingerprint is not c's: again reports that the request is the same under
// the record's policy and should claim again with the record's fingerprint
// and policy; otherwise err is the final answer (nil: answer rec as Do
// does, a mismatch).
func underStoredPolicy(key string, c *Claim, rec *Record) (again bool, err error) {
	if rec.FingerprintPolicy == c.Policy && c.Policy != "" {
		return false, nil
	}
	if c.Prior != nil {
		if known, same := c.Prior(rec.FingerprintPolicy, rec.Fingerprint); known {
			return same, nil // !same: a different request under the stored policy too
		}
	}
	if rec.FingerprintPolicy == "" || rec.FingerprintPolicy == c.Policy {
		// Stored without an id (before ids were kept, or by a store that
		// keeps none): nothing tells it apart from a mismatch under the
		// caller's policy, as before ids were kept.
		return false, nil
	}
	return false, fmt.Errorf("%w: key %q was stored under policy %q (the current one is %q)",
		ErrPolicyChanged, key, rec.FingerprintPolicy, c.Policy)
}

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/idem"
)

// maxAcquireAttempts bounds how often Acquire re-runs its statement when the
// statement's snapshot was older than the row that made it decline (see
// acquireSQL). One re-run is the norm under a burst of concurrent claims; more
// need the row to change again between two statements each time.
const maxAcquireAttempts = 16

// errAcquireChurn is returned, as a backend error, when the row changed under
// every attempt. The key is in an unknown state, so Acquire fails closed.
var errAcquireChurn = errors.New("record changed concurrently on every attempt")

// Acquire claims key for fp in one INSERT ... ON CONFLICT statement, or
// returns the record that is there (see idem.Store). A released record, or
// one past its ExpiresAt, counts as absent and is overwritten. An in-progress
// record whose lease expired and whose fingerprint equals fp is taken over:
// the new lease has a higher token and PrevToken set to the old one, for
// TakeoverGrace after the expiry. An in-progress record with another
// fingerprint is returned unchanged, expired or not.
//
// leaseTTL must be positive. An invalid key returns an error wrapping
// idem.ErrInvalidKey. Timestamps come from the server clock. A row that
// does not decode is never claimed: it is returned as an error wrapping
// idem.ErrCorruptRecord. A claimable row whose token the sequence has not
// passed (the sequence was reset or restored behind the table) is not
// claimed either: the error wraps ErrCounterBehind and
// idem.ErrCorruptRecord, and names the sequence to advance.
func (s *Store) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.AcquirePolicy(ctx, key, fp, "", leaseTTL)
}

// AcquirePolicy is Acquire for a request fingerprinted under policy
// (idem.PolicyStore), in the same statement: the row keeps policy in its
// fp_policy column (NULL for ""). A policy that breaks
// idem.ValidatePolicy is refused before PostgreSQL is asked.
func (s *Store) AcquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := idem.ValidateAcquire(key, policy, leaseTTL); err != nil {
		return nil, nil, fmt.Errorf("pgstore: acquire: %w", err)
	}
	args := []any{key, fp[:], leaseTTL, s.opts.TakeoverGrace, policy}
	for range maxAcquireAttempts {
		var (
			acquired, retry, behind bool
			r                       row
		)
		dest := append([]any{&acquired, &retry, &behind}, r.scanDest()...)
		err := s.queryRow(ctx, "acquire", true, s.sql.acquire, args, dest...)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // the conflicting row is newer than our snapshot
		case err != nil:
			return nil, nil, err
		case retry:
			continue // our snapshot showed an older, claimable version
		case behind:
			return nil, nil, fmt.Errorf("pgstore: acquire %q: token sequence %s is at or below the row's token %d: %w (%w)",
				key, s.seq, r.token, ErrCounterBehind, idem.ErrCorruptRecord)
		case acquired:
			return r.lease(key)
		}
		rec, err := r.record(key)
		if err != nil {
			return nil, nil, err
		}
		return nil, rec, nil
	}
	return nil, nil, backendError("acquire", fmt.Errorf("key %q: %w", key, errAcquireChurn), false)
}

// lease builds the lease of a row this process just claimed.
func (r *row) lease(key string) (*idem.Lease, *idem.Record, error) {
	rec, err := r.record(key)
	if err != nil {
		return nil, nil, err
	}
	if rec.Status != idem.StatusInProgress || r.prevToken < 0 {
		return nil, nil, fmt.Errorf("%w: key %q: claimed row is %s with previous token %d",
			idem.ErrCorruptRecord, key, rec.Status, r.prevToken)
	}
	return &idem.Lease{
		Key:               key,
		Token:             rec.Token,
		Fingerprint:       rec.Fingerprint,
		FingerprintPolicy: rec.FingerprintPolicy,
		PrevToken:         idem.Token(r.prevToken),
		Expiry:            rec.LeaseExpiry,
	}, nil, nil
}

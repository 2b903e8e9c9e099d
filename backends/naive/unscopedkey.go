package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// UnscopedKey is the "key not scoped by endpoint" design: records are found
// by the idempotency key alone, and the request they belong to is ignored.
//
// At the Store level an endpoint is not an argument of its own: the engine
// folds the request's identity, its method and path (the endpoint) and its
// body, into the fingerprint (idemhttp's default fingerprint covers method,
// path, query and body), and tenants into the key's scope (idem.StorageKey).
// This design drops the fingerprint from the lookup: a record answers any
// request that carries its key, and reports the asking request's own
// fingerprint ("SELECT response FROM idem_keys WHERE key = $1", with the
// request hash filled in by the caller), so the engine's mismatch check
// always passes. Two different requests that share a key, say POST /charges
// and POST /refunds with the same Idempotency-Key, share one record: the
// second is answered with the first one's response instead of 422, and its
// own side effect never runs. The checker sees a replay of a response that
// belongs to another request (I4). Found by the mismatched-requests
// scenario. Stripe scopes keys by account and endpoint for this reason.
//
// Tokens, fencing, take-over of an expired lease (by any request with the
// key), replay and retention are sound. Get returns the stored record with
// the fingerprint of the request that created it.
type UnscopedKey struct {
	mapStore
}

// NewUnscopedKey returns an UnscopedKey store.
func NewUnscopedKey(opts Options) *UnscopedKey {
	return newDesign[UnscopedKey](opts)
}

// Acquire claims key, or takes over its expired lease, whatever request
// asks; an existing record is returned with fp as its fingerprint. That is
// the flaw.
func (s *UnscopedKey) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record) {
		switch {
		case r == nil:
			return s.claim(key, fp, leaseTTL, now, 0), nil
		case r.Status == idem.StatusInProgress && !r.LeaseLive(now):
			return s.claim(key, fp, leaseTTL, now, r.Token), nil
		}
		rec := copyOf(r)
		rec.Fingerprint = fp
		return nil, rec
	})
}

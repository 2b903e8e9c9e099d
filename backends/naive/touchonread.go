package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// TouchOnRead is the "touch on read" design: an Acquire that finds the
// key in progress under a live lease, with the same fingerprint, extends
// that lease (now plus the TTL, as a cache refreshes an entry it serves)
// and reports the record in progress. A key whose holder died stays
// blocked for as long as its clients retry within a TTL of each other,
// and is never taken over while they do; once the retries stop the lease
// runs out, the next Acquire takes it over, and the probe at the end of a
// run finds the key free.
//
// Fencing, tokens, retention, replay and fingerprints are sound. Found by
// the take-over liveness invariant T2, which bounds how long after the last
// grant or renewal a key may answer "in progress": in the simulation
// (package sim) and in run (scenario crash-holder), and by the conformance
// case ReadsDoNotExtendLease.
type TouchOnRead struct {
	mapStore
}

// NewTouchOnRead returns a TouchOnRead store.
func NewTouchOnRead(opts Options) *TouchOnRead {
	return newDesign[TouchOnRead](opts)
}

// Acquire claims an absent key, takes over an expired lease, refreshes a
// live one, and returns any other record unchanged. The refresh is the
// flaw.
func (s *TouchOnRead) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record) {
		if ok, prev := mayTakeOver(r, fp, now); ok {
			return s.claim(key, fp, leaseTTL, now, prev), nil
		}
		if r.Status == idem.StatusInProgress && r.Fingerprint == fp {
			n := copyOf(r)
			n.LeaseExpiry = now.Add(leaseTTL)
			n.ExpiresAt = s.keepUntil(n.LeaseExpiry)
			s.records[key] = n
			return nil, copyOf(n)
		}
		return nil, copyOf(r)
	})
}

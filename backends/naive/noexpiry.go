package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// NoExpiry is the "lock with no expiry" design: an in-progress record is a
// lock that nothing but its holder removes ("SETNX" without "EX"). Acquire
// never takes over, however long ago the lease ended, and the record is never
// swept. A holder that crashed between Acquire and Complete blocks its key
// forever: every retry gets idem.ErrInProgress, the key stays stuck in
// progress (I6, liveness). Found by the crash-holder scenario.
//
// Leases still carry an expiry (the TTL the caller asked for, reported in
// Lease.Expiry and Record.LeaseExpiry and moved by Heartbeat); it is simply
// never acted upon. Every write is fenced; everything else is sound.
type NoExpiry struct {
	mapStore
}

// NewNoExpiry returns a NoExpiry store. Options.TakeoverGrace is ignored:
// in-progress records are kept forever.
func NewNoExpiry(opts Options) *NoExpiry {
	s := &NoExpiry{}
	s.init(opts)
	s.grace = -1
	return s
}

// Acquire claims an absent key; any existing record, in progress with a
// live or an expired lease, is returned unchanged. That is the flaw.
func (s *NoExpiry) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record) {
		if r != nil {
			return nil, copyOf(r)
		}
		return s.claim(key, fp, leaseTTL, now, 0), nil
	})
}

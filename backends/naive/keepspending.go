package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// KeepsPending is the "release leaves the pending record behind" design: the
// store keeps a lock and a pending record for a key in flight, and Release
// removes only the lock. The pending record stays until its own retention
// ends (Options.TakeoverGrace), and every request for the key meanwhile is
// answered "in progress" (409), including the retries that the retryable
// failure asked for. The key is stuck in progress long after the faults
// healed (I6, liveness). Found by the retryable-failures scenario. Peers'
// trackers know it as "key answers 409 for hours after a failed request".
//
// Release is fenced (a stale holder is refused); Heartbeat, Complete and
// Fail, tokens, replay, fingerprints and retention are sound.
type KeepsPending struct {
	mapStore
}

// NewKeepsPending returns a KeepsPending store.
func NewKeepsPending(opts Options) *KeepsPending {
	return newDesign[KeepsPending](opts)
}

// Release checks that l holds the key, then leaves the record in progress,
// with a lease that ends only when the record's retention does. That is the
// flaw.
func (s *KeepsPending) Release(ctx context.Context, l *idem.Lease) error {
	return s.locked(ctx, func(now time.Time) error {
		r, err := s.owned(l, now)
		if err != nil {
			return err
		}
		n := copyOf(r)
		n.LeaseExpiry = s.keepUntil(now)
		n.ExpiresAt = n.LeaseExpiry
		s.records[l.Key] = n
		return nil
	})
}

package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// UnfencedHeartbeat is the "heartbeat without an owner check" design: a
// heartbeat extends the key's lease whoever holds it ("PEXPIRE key ttl";
// "UPDATE … SET lease_expires_at = … WHERE key = $1", with no token in the
// condition) and reports success whatever it found. A holder that stalled
// past its lease and was taken over is never told: its heartbeats keep
// succeeding (and keep its successor's lease alive), so the engine does not
// cancel its execution, and a business function that stops on cancellation
// goes on to its side effect. Every heartbeat it sends after the take-over
// is a write under a superseded token (I8). Found by the stale-heartbeat
// scenario.
//
// Complete, Fail and Release stay fenced; everything else is sound.
type UnfencedHeartbeat struct {
	mapStore
}

// NewUnfencedHeartbeat returns an UnfencedHeartbeat store.
func NewUnfencedHeartbeat(opts Options) *UnfencedHeartbeat {
	return newDesign[UnfencedHeartbeat](opts)
}

// Heartbeat extends the lease of whatever in-progress record the key has,
// moves l.Expiry forward and returns nil, without comparing tokens, and
// also returns nil when the key is finished or gone. That is the flaw.
func (s *UnfencedHeartbeat) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	return s.locked(ctx, func(now time.Time) error {
		r, err := s.live(l.Key, now)
		if err != nil {
			return err
		}
		if r != nil && r.Status == idem.StatusInProgress {
			s.extend(l, r, now.Add(leaseTTL))
		} else {
			l.Expiry = now.Add(leaseTTL)
		}
		return nil
	})
}

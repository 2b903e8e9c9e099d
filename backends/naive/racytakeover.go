package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// RacyTakeover is the "take-over in two steps" design: claiming an absent
// key is one atomic step ("INSERT … ON CONFLICT DO NOTHING", "SET NX"), but
// taking over an expired lease reads the record, sees the lease expired, and
// overwrites it in a second, separate step ("SELECT …; UPDATE … SET token =
// nextval(…) WHERE key = $1", with no condition on the token it read).
// Several callers that retry a crashed request at the same moment all see
// the same expired lease and all take it over, each with the new token it
// drew when it read and the same previous token, and all run. The last
// writer's record stays, and the last writer may hold the lower token.
//
// With a plain sink their effects all apply (I1). A fenced sink with
// recovery absorbs the double effect (every successor raises the fence
// before it looks), so there the flaw shows in the lease grants: when the
// racer with the lower token wrote last, its completion or failure is
// accepted although a higher token was granted (I8); and a late racer can
// overwrite a record another racer already completed, so the key is
// completed twice (I4). Found by the takeover-race scenario.
//
// Everything else is sound, including the first claim of a key.
type RacyTakeover struct {
	mapStore
}

// NewRacyTakeover returns a RacyTakeover store. Options.Window sets the
// gap between the read and the write of a take-over (see Options).
func NewRacyTakeover(opts Options) *RacyTakeover {
	return newDesign[RacyTakeover](opts)
}

// Acquire claims an absent key at once. On an expired lease it draws the
// next token, lets go of the lock, waits out the window and overwrites the
// record without looking again. That is the flaw.
func (s *RacyTakeover) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	var l *idem.Lease
	read := func(now time.Time, prev idem.Token) { l = s.newLease(key, fp, leaseTTL, now, prev) }
	write := func(now time.Time, prev idem.Token) *idem.Lease {
		if l == nil { // an absent key: claimed at once
			return s.claim(key, fp, leaseTTL, now, prev)
		}
		l.Expiry = now.Add(leaseTTL)
		s.hold(l)
		return l
	}
	return s.takeOverInTwoSteps(ctx, key, fp, read, write)
}

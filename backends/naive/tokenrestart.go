package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// TokenRestart is the "fencing token kept in the record" design: each key
// counts its own tokens in its record ("HINCRBY key token 1" on the record
// hash; "INSERT … token = 1 ON CONFLICT … SET token = token + 1"). A take-over
// gets the previous token plus one, as it should, but once the record is
// deleted, by Release or by the end of its retention, the count goes with
// it and the next Acquire starts again at token 1. A stalled holder then
// shares its token with a newer execution, and every write it makes is
// accepted again; a fenced sink that already saw a higher token rejects the
// new execution's effect as stale. A published bug class of idempotency and
// lock libraries that keep the fencing counter in the key itself.
//
// The token order over lease grants (I7) shows it: a grant after Release
// carries a lower token than the grant before. A stalled holder whose
// restarted token is current again writes under a superseded token (I8).
// Fencing of every write, take-over, replay, fingerprints and retention are
// sound.
type TokenRestart struct {
	mapStore
}

// NewTokenRestart returns a TokenRestart store.
func NewTokenRestart(opts Options) *TokenRestart {
	return newDesign[TokenRestart](opts)
}

// Acquire claims key atomically. The token is the previous record's token
// plus one on a take-over, and 1 on a key with no record. That is the
// flaw.
func (s *TokenRestart) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquireClaimable(ctx, key, fp, func(_ *idem.Record, now time.Time, prev idem.Token) (*idem.Lease, *idem.Record) {
		l := &idem.Lease{Key: key, Token: prev + 1, Fingerprint: fp, PrevToken: prev, Expiry: now.Add(leaseTTL)}
		s.hold(l)
		return l, nil
	})
}

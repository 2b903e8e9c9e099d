package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// ExpiredResponse is the permanent failure FailOnExpiry stores in place of
// a take-over.
var ExpiredResponse = idem.Response{Status: 504, Body: []byte("request abandoned: its lease expired")}

// FailOnExpiry is the "an abandoned request has failed" design: a request
// that finds its key in progress under an expired lease does not take it
// over; the store writes a permanent failure ("request abandoned") over
// the record in the same atomic step, under a new token, and every copy of
// the request replays that failure from then on. It looks safe: nothing
// runs twice, and the old holder's completion is fenced off.
//
// The flaw: the old holder was not dead, only slow. It still runs its
// function and applies its effect after the failure was stored and
// replayed, and nobody raised the sink's fence for it (there was no
// take-over to run recovery), so even a fenced sink applies it: the
// clients were told "failed" and the charge happened. The key model
// refuses an effect after the key's commit (I4). Found by the gc-pause
// scenario, whose holders stall before their effect past the lease.
//
// Everything else is sound.
type FailOnExpiry struct {
	mapStore
}

// NewFailOnExpiry returns a FailOnExpiry store.
func NewFailOnExpiry(opts Options) *FailOnExpiry {
	return newDesign[FailOnExpiry](opts)
}

// Acquire claims an absent key at once; a key in progress under an expired
// lease with the same fingerprint is failed (ExpiredResponse) instead of
// taken over, and the failed record returned. That is the flaw.
func (s *FailOnExpiry) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquireClaimable(ctx, key, fp, func(_ *idem.Record, now time.Time, prev idem.Token) (*idem.Lease, *idem.Record) {
		if prev == 0 {
			return s.claim(key, fp, leaseTTL, now, 0), nil
		}
		s.tokens++
		resp := ExpiredResponse
		f := &idem.Record{Key: key, Status: idem.StatusFailed, Fingerprint: fp, Token: s.tokens,
			Response: &resp, ExpiresAt: s.keepUntil(now)}
		s.records[key] = f
		return nil, copyOf(f)
	})
}

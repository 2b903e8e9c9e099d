package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// RetriesUncertain is the "unknown means try again" design: the store
// records an uncertain outcome (the function could not tell whether its
// effect happened) as the engine asks, but Acquire treats the uncertain
// record like an expired lease and hands the key to the next request,
// which runs the effect again: the payment whose answer was lost is made a
// second time. Found by the uncertain-outcomes scenario (I9, and I1 when
// the first effect had applied). Peers' trackers know it as "a timed-out
// charge is charged again on retry".
//
// MarkUncertain and Resolve are fenced by token; everything else is sound.
type RetriesUncertain struct {
	mapStore
}

var _ idem.UncertainStore = (*RetriesUncertain)(nil)

// NewRetriesUncertain returns a RetriesUncertain store.
func NewRetriesUncertain(opts Options) *RetriesUncertain {
	return newDesign[RetriesUncertain](opts)
}

// Acquire is mapStore's, except that an uncertain record with the
// request's fingerprint is taken over at once. That is the flaw.
func (s *RetriesUncertain) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record) {
		if r != nil && r.Status == idem.StatusUncertain && r.Fingerprint == fp {
			return s.claim(key, fp, leaseTTL, now, r.Token), nil
		}
		ok, prev := mayTakeOver(r, fp, now)
		if !ok {
			return nil, copyOf(r)
		}
		return s.claim(key, fp, leaseTTL, now, prev), nil
	})
}

// MarkUncertain implements idem.UncertainStore: it is fenced.
func (s *RetriesUncertain) MarkUncertain(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusUncertain, resp, retention, s.fenced)
}

// Resolve implements idem.UncertainStore: it is fenced by token.
func (s *RetriesUncertain) Resolve(ctx context.Context, key string, token idem.Token, applied *idem.Response, retention time.Duration) error {
	return s.locked(ctx, func(now time.Time) error {
		r, err := s.found(key, now)
		switch {
		case err != nil:
			return err
		case r.Status != idem.StatusUncertain || r.Token != token:
			return idem.ErrNotUncertain
		case applied == nil:
			delete(s.records, key)
		default:
			s.records[key] = &idem.Record{Key: key, Status: idem.StatusCompleted, Fingerprint: r.Fingerprint, Token: r.Token,
				Response: applied, ExpiresAt: now.Add(retention)}
		}
		return nil
	})
}

package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// CacheOnSuccess is the "cache only on success" design: the store remembers
// finished responses and nothing else. There is no in-progress state, so
// Acquire hands out a lease whenever the key has no completed or failed
// record, and concurrent duplicates all run until the first of them
// finishes: double execution (I1), found by the duplicates scenario.
//
// Only Complete and Fail write. The first one for a key wins (an insert that
// does nothing on conflict) and later ones get idem.ErrLeaseLost, so the
// stored response is the one that is replayed (I3 holds). Heartbeat and
// Release have nothing to renew or delete; they report idem.ErrLeaseLost once
// the key has a record. Tokens, replay, fingerprints and retention are sound.
type CacheOnSuccess struct {
	mapStore
}

// NewCacheOnSuccess returns a CacheOnSuccess store.
func NewCacheOnSuccess(opts Options) *CacheOnSuccess {
	return newDesign[CacheOnSuccess](opts)
}

// Acquire returns the finished record of key if there is one, else a new
// lease that is written nowhere. That is the flaw.
func (s *CacheOnSuccess) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record) {
		if r != nil {
			return nil, copyOf(r)
		}
		return s.newLease(key, fp, leaseTTL, now, 0), nil
	})
}

// unfinished returns idem.ErrLeaseLost if l's key already has a record. The
// lock must be held.
func (s *CacheOnSuccess) unfinished(l *idem.Lease, now time.Time) error {
	r, err := s.live(l.Key, now)
	if err != nil {
		return err
	}
	if r != nil {
		return idem.ErrLeaseLost
	}
	return nil
}

// Heartbeat moves l.Expiry forward unless the key was finished meanwhile
// (idem.ErrLeaseLost). Nothing is stored.
func (s *CacheOnSuccess) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	return s.locked(ctx, func(now time.Time) error {
		if err := s.unfinished(l, now); err != nil {
			return err
		}
		l.Expiry = now.Add(leaseTTL)
		return nil
	})
}

// Complete stores resp unless the key already has a record
// (idem.ErrLeaseLost).
func (s *CacheOnSuccess) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusCompleted, resp, retention, s.unfinished)
}

// Fail stores resp as a failure unless the key already has a record
// (idem.ErrLeaseLost).
func (s *CacheOnSuccess) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusFailed, resp, retention, s.unfinished)
}

// Release deletes nothing, since nothing was written; it reports
// idem.ErrLeaseLost if the key was finished meanwhile.
func (s *CacheOnSuccess) Release(ctx context.Context, l *idem.Lease) error {
	return s.locked(ctx, func(now time.Time) error { return s.unfinished(l, now) })
}

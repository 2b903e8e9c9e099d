package memstore

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

var _ idem.UncertainStore = (*Store)(nil)

// MarkUncertain implements idem.UncertainStore: Complete's fenced write,
// with StatusUncertain.
func (s *Store) MarkUncertain(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusUncertain, resp, retention)
}

// Resolve implements idem.UncertainStore. The uncertain entry is replaced,
// never modified, since readers keep a pointer to its response.
func (s *Store) Resolve(ctx context.Context, key string, token idem.Token, applied *idem.Response, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.clock.Now()
	e := sh.live(key, now)
	if e == nil {
		return idem.ErrNotFound
	}
	if _, err := e.record(key); err != nil {
		return err
	}
	if e.status != idem.StatusUncertain || e.token != token {
		return idem.ErrNotUncertain
	}
	if applied == nil {
		sh.remove(key)
		return nil
	}
	sh.entries[key] = &entry{status: idem.StatusCompleted, fp: e.fp, policy: e.policy, token: e.token, expires: now.Add(retention),
		hasResp: true, resp: *applied}
	return nil
}

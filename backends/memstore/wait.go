package memstore

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// maxWaitSlice bounds one wait when the lease expiry cannot be timed with
// the real clock (an injected clock), so that WaitChange re-checks now and
// then.
const maxWaitSlice = 50 * time.Millisecond

// WaitChange implements idem.Waiter: it returns nil once key's record is no
// longer in progress under a live lease (completed, failed, released, taken
// over or expired), or ctx.Err() when ctx ends first. It never returns early
// while the lease is live and unchanged.
func (s *Store) WaitChange(ctx context.Context, key string) error {
	for {
		ch, left := s.watch(key)
		if ch == nil {
			return nil
		}
		if _, system := s.clock.(idem.SystemClock); !system {
			// An injected clock moves on its own schedule: look again soon.
			left = min(left, maxWaitSlice)
		}
		t := time.NewTimer(left)
		select {
		case <-ch:
			t.Stop()
			return nil
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// watch returns a channel closed at the next change of key's live
// in-progress record and the time left on its lease, or nil when the key is
// not in progress under a live lease.
func (s *Store) watch(key string) (<-chan struct{}, time.Duration) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.clock.Now()
	e := sh.live(key, now)
	if e == nil || e.status != idem.StatusInProgress || !now.Before(e.leaseExp) {
		return nil, 0
	}
	ch := sh.changed[key]
	if ch == nil {
		if sh.changed == nil {
			sh.changed = make(map[string]chan struct{})
		}
		ch = make(chan struct{})
		sh.changed[key] = ch
	}
	return ch, e.leaseExp.Sub(now)
}

// notify wakes the waiters of key. The shard lock must be held.
func (sh *shard) notify(key string) {
	if ch, ok := sh.changed[key]; ok {
		close(ch)
		delete(sh.changed, key)
	}
}

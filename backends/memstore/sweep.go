package memstore

import (
	"context"
	"time"
)

// Sweep removes every record past its expiry and returns how many it removed.
// It locks one shard at a time, so it does not stall the whole store.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	removed := 0
	err := s.eachShard(ctx, func(sh *shard, now time.Time) bool {
		for k, e := range sh.entries {
			if !now.Before(e.expires) {
				sh.remove(k)
				removed++
			}
		}
		return true
	})
	return removed, err
}

// eachShard runs f on one shard after the other, under that
// shard's lock, with the time read under it. It stops after a call of f
// that returns false, or with ctx's error when ctx ends between two shards.
// Sweep, ListStuckPrefix and Stats read the store through it.
func (s *Store) eachShard(ctx context.Context, f func(sh *shard, now time.Time) bool) error {
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		more := f(sh, s.clock.Now())
		sh.mu.Unlock()
		if !more {
			return nil
		}
	}
	return nil
}

func (s *Store) sweepLoop(every time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_, _ = s.Sweep(context.Background())
		}
	}
}

// Len returns the number of stored records, expired ones not yet swept
// included.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}

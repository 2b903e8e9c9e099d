package memstore

import (
	"context"
	"time"
)

// Sweep removes every record past its expiry and returns how many it removed.
// It locks one shard at a time, so it does not stall the whole store.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	removed := 0
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		now := s.clock.Now()
		for k, e := range sh.entries {
			if !now.Before(e.expires) {
				delete(sh.entries, k)
				removed++
			}
		}
		sh.mu.Unlock()
	}
	return removed, nil
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

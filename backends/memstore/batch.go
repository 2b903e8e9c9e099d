package memstore

import (
	"context"
	"errors"
	"time"

	"github.com/idembench/idembench/idem"
)

// AcquireBatch implements idem.BatchStore: the keys of one shard are claimed
// in one critical section, shard after shard; per key it is Acquire.
func (s *Store) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, leaseTTL time.Duration) []idem.AcquireResult {
	if err := ctx.Err(); err != nil {
		return idem.AcquireBatchFailed(len(reqs), err)
	}
	out := make([]idem.AcquireResult, len(reqs))
	s.byShard(len(reqs), func(i int) string { return reqs[i].Key }, func(sh *shard, idx []int, now time.Time) {
		for _, i := range idx {
			r := &out[i]
			r.Lease, r.Record, r.Err = s.acquireLocked(sh, reqs[i].Key, reqs[i].Fingerprint, "", leaseTTL, now)
		}
	})
	return out
}

// FinishBatch implements idem.BatchStore: the writes of one shard are made
// in one critical section; per write it is Complete, Fail or Release.
func (s *Store) FinishBatch(ctx context.Context, fs []idem.Finish, retention time.Duration) []error {
	if err := ctx.Err(); err != nil {
		return idem.FinishBatchFailed(len(fs), err)
	}
	out := make([]error, len(fs))
	s.byShard(len(fs), func(i int) string { return fs[i].Lease.Key }, func(sh *shard, idx []int, now time.Time) {
		for _, i := range idx {
			f := fs[i]
			switch f.Kind {
			case idem.FinishComplete:
				out[i] = sh.finishLocked(f.Lease, idem.StatusCompleted, f.Response, retention, now)
			case idem.FinishFail:
				out[i] = sh.finishLocked(f.Lease, idem.StatusFailed, f.Response, retention, now)
			case idem.FinishRelease:
				out[i] = sh.releaseLocked(f.Lease, now)
			default:
				out[i] = errors.New("memstore: finish batch: unknown finish kind " + f.Kind.String())
			}
		}
	})
	return out
}

// byShard calls do once per shard that holds one of the n keys, with that
// shard's lock held and the indexes of its keys in order.
func (s *Store) byShard(n int, key func(int) string, do func(sh *shard, idx []int, now time.Time)) {
	groups := make(map[*shard][]int)
	var order []*shard
	for i := range n {
		sh := s.shard(key(i))
		if _, ok := groups[sh]; !ok {
			order = append(order, sh)
		}
		groups[sh] = append(groups[sh], i)
	}
	for _, sh := range order {
		sh.mu.Lock()
		do(sh, groups[sh], s.clock.Now())
		sh.mu.Unlock()
	}
}

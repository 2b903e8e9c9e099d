package memstore

import (
	"context"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
)

// The memory store does not implement idem.CorruptLister or
// idem.CorruptPurger: it holds only records it built itself, which always
// decode, so Stats counts Corrupt only as a safeguard.

// ListStuck implements idem.Lister. It locks one shard at a time and reads
// only its in-progress records (shard.pending).
func (s *Store) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	return s.ListStuckPrefix(ctx, "", olderThan, limit)
}

// ListStuckPrefix implements idem.PrefixLister: ListStuck of the keys that
// start with prefix.
func (s *Store) ListStuckPrefix(ctx context.Context, prefix string, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	limit = idem.ListLimit(limit)
	olderThan = max(olderThan, 0)
	var out []*idem.Record
	err := s.eachShard(ctx, func(sh *shard, now time.Time) bool {
		for k := range sh.pending {
			if len(out) == limit {
				break
			}
			e := sh.entries[k]
			if e == nil || !strings.HasPrefix(k, prefix) || e.status != idem.StatusInProgress || !now.Before(e.expires) || now.Sub(e.leaseExp) < olderThan || now.Before(e.leaseExp) {
				continue
			}
			if rec, err := e.record(k); err == nil {
				out = append(out, rec)
			}
		}
		return len(out) < limit
	})
	return out, err
}

// ListUncertain implements idem.UncertainLister. It locks one shard at a
// time.
func (s *Store) ListUncertain(ctx context.Context, prefix string, limit int) ([]*idem.Record, error) {
	limit = idem.ListLimit(limit)
	var out []*idem.Record
	err := s.eachShard(ctx, func(sh *shard, now time.Time) bool {
		for k, e := range sh.entries {
			if len(out) == limit {
				break
			}
			if !strings.HasPrefix(k, prefix) || e.status != idem.StatusUncertain || !now.Before(e.expires) {
				continue
			}
			if rec, err := e.record(k); err == nil {
				out = append(out, rec)
			}
		}
		return len(out) < limit
	})
	return out, err
}

// Stats implements idem.Statter. Bytes counts keys and stored responses
// (body and header names and values), not the map's own overhead.
func (s *Store) Stats(ctx context.Context) (idem.StoreStats, error) {
	var st idem.StoreStats
	err := s.eachShard(ctx, func(sh *shard, now time.Time) bool {
		for k, e := range sh.entries {
			if !now.Before(e.expires) {
				continue
			}
			rec, err := e.record(k)
			if err != nil {
				st.Corrupt++
				continue
			}
			st.Bytes += int64(len(k))
			st.Add(rec, now)
			if e.hasResp {
				st.Bytes += int64(e.resp.Size())
			}
		}
		return true
	})
	return st, err
}

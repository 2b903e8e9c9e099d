package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/idem"
)

// scanBatch is the COUNT hint of the SCAN calls of ListStuck and Stats.
const scanBatch = 500

// ListStuck implements idem.Lister: it SCANs the record names of the
// store's prefix on every primary (on Redis Cluster) and reads the records
// of each SCAN batch in one pipelined round trip, comparing their lease
// expiry with the server's TIME. It reads every record: an operator's or
// a completer's call, not a hot-path one.
func (s *Store) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	return s.ListStuckPrefix(ctx, "", olderThan, limit)
}

// ListStuckPrefix implements idem.PrefixLister: ListStuck of the keys that
// start with prefix. The SCAN matches the prefix, so the records of other
// keys are not read.
func (s *Store) ListStuckPrefix(ctx context.Context, prefix string, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	olderThan = max(olderThan, 0)
	return s.listWhere(ctx, prefix, limit, func(rec *idem.Record, now time.Time) bool {
		return rec.Status == idem.StatusInProgress && now.Sub(rec.LeaseExpiry) >= olderThan && !now.Before(rec.LeaseExpiry)
	})
}

// ListUncertain implements idem.UncertainLister, with ListStuck's SCAN.
func (s *Store) ListUncertain(ctx context.Context, prefix string, limit int) ([]*idem.Record, error) {
	return s.listWhere(ctx, prefix, limit, func(rec *idem.Record, _ time.Time) bool { return rec.Status == idem.StatusUncertain })
}

// listWhere returns up to limit records whose key starts with prefix and
// that keep says to list at the server's time.
func (s *Store) listWhere(ctx context.Context, prefix string, limit int, keep func(rec *idem.Record, now time.Time) bool) ([]*idem.Record, error) {
	return scanUpTo(ctx, s, prefix, limit, func(ctx context.Context, node *redis.Client, keys []string, add func(*idem.Record) bool) error {
		now, err := node.Time(ctx).Result()
		if err != nil {
			return storeError("list", err, false)
		}
		recs, _, err := s.getMany(ctx, node, keys)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			// nil: gone meanwhile, or corrupt (reported by Get and Stats)
			if rec != nil && keep(rec, now) && !add(rec) {
				return nil
			}
		}
		return nil
	})
}

// scanUpTo collects up to limit (idem.ListLimit) items from the records
// whose key starts with prefix: scanRecords hands each batch of keys to
// batch, which adds its items with add and stops when add reports that
// the list is full.
func scanUpTo[T any](ctx context.Context, s *Store, prefix string, limit int,
	batch func(ctx context.Context, node *redis.Client, keys []string, add func(T) bool) error) ([]T, error) {
	limit = idem.ListLimit(limit)
	var out []T
	add := func(v T) bool {
		out = append(out, v)
		return len(out) < limit
	}
	errFull := errors.New("full")
	err := s.scanRecords(ctx, prefix, func(ctx context.Context, node *redis.Client, keys []string) error {
		if len(out) >= limit { // another primary filled it
			return errFull
		}
		if err := batch(ctx, node, keys, add); err != nil {
			return err
		}
		if len(out) >= limit {
			return errFull
		}
		return nil
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	return out, err
}

// getMany reads the records of keys, which live on node, as Get does, in
// one pipelined round trip (after making sure node has the script). It
// returns the records, nil for a key that is gone or does not decode, and
// the keys whose records Get would report as corrupt: ListStuck reads the
// first, ListCorrupt the second.
func (s *Store) getMany(ctx context.Context, node *redis.Client, keys []string) (recs []*idem.Record, corrupt []string, err error) {
	if err := getScript.Load(ctx, node).Err(); err != nil {
		return nil, nil, storeError("list", err, false)
	}
	cmds := make([]*redis.Cmd, len(keys))
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = getScript.EvalSha(ctx, p, []string{keysFor(s.opts.Prefix, k).record})
		}
		return nil
	})
	recs = make([]*idem.Record, len(keys))
	for i, k := range keys {
		res, err := cmds[i].Slice()
		if err != nil {
			return nil, nil, storeError("list", err, false)
		}
		if code, _ := replyInt(res, 0); code == resultCorrupt {
			corrupt = append(corrupt, k)
			continue
		}
		switch rec, ok, err := scriptRecord(k, res, 1); {
		case ok && err == nil:
			recs[i] = rec
		case ok && errors.Is(err, idem.ErrCorruptRecord):
			corrupt = append(corrupt, k)
		}
	}
	return recs, corrupt, nil
}

// Stats implements idem.Statter. Bytes sums MEMORY USAGE of the records.
func (s *Store) Stats(ctx context.Context) (idem.StoreStats, error) {
	var st idem.StoreStats
	err := s.scanRecords(ctx, "", func(ctx context.Context, node *redis.Client, keys []string) error {
		now, err := node.Time(ctx).Result()
		if err != nil {
			return storeError("stats", err, false)
		}
		usage := make([]*redis.IntCmd, 0, len(keys))
		pipe := node.Pipeline()
		for _, k := range keys {
			usage = append(usage, pipe.MemoryUsage(ctx, keysFor(s.opts.Prefix, k).record))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return storeError("stats", err, false)
		}
		for i, k := range keys {
			rec, err := s.Get(ctx, k)
			switch {
			case errors.Is(err, idem.ErrNotFound):
				continue
			case errors.Is(err, idem.ErrCorruptRecord):
				st.Corrupt++
				continue
			case err != nil:
				return err
			}
			st.Bytes += usage[i].Val()
			st.Add(rec, now)
		}
		return nil
	})
	return st, err
}

// scanRecords calls fn with batches of idempotency keys that start with
// keyPrefix ("" for all) whose record names SCAN finds on each node: the single node, or every primary of a
// Cluster. fn gets the node's client. The primaries are scanned at once,
// but fn is never called concurrently.
func (s *Store) scanRecords(ctx context.Context, keyPrefix string, fn func(ctx context.Context, node *redis.Client, keys []string) error) error {
	var mu sync.Mutex
	match := globEscape(s.opts.Prefix+":{"+escapeTag(keyPrefix)) + "*}"
	scan := func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		for {
			names, next, err := node.Scan(ctx, cursor, match, scanBatch).Result()
			if err != nil {
				return storeError("scan", err, false)
			}
			keys := make([]string, 0, len(names))
			for _, n := range names {
				if k, ok := s.keyOf(n); ok {
					keys = append(keys, k)
				}
			}
			if len(keys) > 0 {
				mu.Lock()
				err := fn(ctx, node, keys)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *redis.Client:
		return scan(ctx, c)
	}
	return errors.New("redisstore: listing needs a *redis.Client or *redis.ClusterClient")
}

// keyOf returns the idempotency key of a record name prefix:{tag}, undoing
// escapeTag; ok is false for names that are not records.
func (s *Store) keyOf(name string) (string, bool) {
	tag, ok := strings.CutPrefix(name, s.opts.Prefix+":{")
	if !ok || !strings.HasSuffix(tag, "}") {
		return "", false
	}
	tag = tag[:len(tag)-1]
	if strings.ContainsAny(tag, "{}") {
		return "", false
	}
	key := strings.NewReplacer("%7B", "{", "%7D", "}", "%25", "%").Replace(tag)
	if keysFor(s.opts.Prefix, key).record != name || idem.ValidateKey(key) != nil {
		return "", false
	}
	return key, true
}

// globEscape escapes the characters SCAN MATCH patterns treat specially.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

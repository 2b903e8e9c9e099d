package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/idembench/idembench/idem"
)

var (
	_ idem.Lister       = (*Store)(nil)
	_ idem.PrefixLister = (*Store)(nil)
	_ idem.Statter      = (*Store)(nil)
)

// listStuckSQL: in-progress rows whose lease ended at least $1 ago and
// whose key starts with $3, at most $2 of them. It scans the table (no index on lease_expires_at): an
// operator's query, not a hot-path one.
const listStuckSQL = `
SELECT t.key, t.status, t.fingerprint, t.token, t.prev_token, t.lease_expires_at, t.response, t.expires_at
FROM {{table}} t
WHERE t.status = 'in_progress' AND t.expires_at > statement_timestamp()
  AND t.lease_expires_at <= statement_timestamp() - $1::interval
  AND left(t.key, length($3::text)) = $3::text
LIMIT $2`

// statsSQL counts the live rows per status (and the stuck ones) and reads
// the size of the table with its indexes and TOAST.
const statsSQL = `
SELECT
  count(*) FILTER (WHERE status = 'in_progress'),
  count(*) FILTER (WHERE status = 'in_progress' AND lease_expires_at <= statement_timestamp()),
  count(*) FILTER (WHERE status = 'completed'),
  count(*) FILTER (WHERE status = 'failed'),
  count(*) FILTER (WHERE status NOT IN ('in_progress', 'completed', 'failed')),
  pg_total_relation_size($1::regclass)
FROM {{table}}
WHERE status <> 'released' AND expires_at > statement_timestamp()`

// ListStuck implements idem.Lister with one statement.
func (s *Store) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	return s.ListStuckPrefix(ctx, "", olderThan, limit)
}

// ListStuckPrefix implements idem.PrefixLister: ListStuck of the keys that
// start with prefix, filtered in the same statement.
func (s *Store) ListStuckPrefix(ctx context.Context, prefix string, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	if limit <= 0 {
		limit = idem.DefaultListLimit
	}
	olderThan = max(olderThan, 0)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, backendError("list", err, false)
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.names(listStuckSQL), olderThan, limit, prefix)
	if err != nil {
		return nil, backendError("list", err, false)
	}
	defer rows.Close()
	var out []*idem.Record
	for rows.Next() {
		var (
			key string
			r   row
		)
		if err := rows.Scan(append([]any{&key}, r.scanDest()...)...); err != nil {
			continue
		}
		if rec, err := r.record(key); err == nil {
			out = append(out, rec)
		}
	}
	if err := rows.Err(); err != nil {
		return out, backendError("list", err, false)
	}
	return out, nil
}

// Stats implements idem.Statter. Bytes is pg_total_relation_size of the
// records table (released and expired rows the sweeper has not deleted yet
// included).
func (s *Store) Stats(ctx context.Context) (idem.StoreStats, error) {
	var st idem.StoreStats
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return st, backendError("stats", err, false)
	}
	defer conn.Release()
	err = conn.QueryRow(ctx, s.names(statsSQL), s.table).
		Scan(&st.InProgress, &st.Stuck, &st.Completed, &st.Failed, &st.Corrupt, &st.Bytes)
	if err != nil {
		return st, backendError("stats", err, false)
	}
	return st, nil
}

// names fills the table name into an admin statement.
func (s *Store) names(sql string) string {
	return strings.ReplaceAll(sql, "{{table}}", s.table)
}

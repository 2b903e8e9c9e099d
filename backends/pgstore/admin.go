package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idembench/idembench/idem"
)

// listStuckSQL: in-progress rows whose lease ended at least $1 ago and
// whose key starts with $3, at most $2 of them. It scans the table (no index on lease_expires_at): an
// operator's query, not a hot-path one.
const listStuckSQL = `
SELECT t.key, t.status, t.fingerprint, t.token, t.prev_token, t.lease_expires_at, t.response, t.expires_at, t.fp_policy
FROM {{table}} t
WHERE t.status = 'in_progress' AND t.expires_at > statement_timestamp()
  AND t.lease_expires_at <= statement_timestamp() - $1::interval
  AND left(t.key, length($3::text)) = $3::text
LIMIT $2`

// presentRowsSQL streams the present rows whose key starts with $1 (every
// row for ""), with the columns Get decodes and the statement's time. It
// reads the whole table: an operator's query.
const presentRowsSQL = `
SELECT t.key, t.status, t.fingerprint, t.token, t.prev_token, t.lease_expires_at, t.response, t.expires_at,
	t.fp_policy, statement_timestamp()
FROM {{table}} t
WHERE t.status <> 'released' AND t.expires_at > statement_timestamp()
  AND left(t.key, length($1::text)) = $1::text`

// ListStuck implements idem.Lister with one statement.
func (s *Store) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	return s.ListStuckPrefix(ctx, "", olderThan, limit)
}

// ListStuckPrefix implements idem.PrefixLister: ListStuck of the keys that
// start with prefix, filtered in the same statement.
func (s *Store) ListStuckPrefix(ctx context.Context, prefix string, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	limit = idem.ListLimit(limit)
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

// ListUncertain implements idem.UncertainLister: it reads the present rows
// whose key starts with prefix (an operator's query) and keeps the
// uncertain ones that decode.
func (s *Store) ListUncertain(ctx context.Context, prefix string, limit int) ([]*idem.Record, error) {
	limit = idem.ListLimit(limit)
	var out []*idem.Record
	err := s.eachPresentRow(ctx, "list", prefix, func(_ string, rec *idem.Record, err error, _ time.Time) bool {
		if err == nil && rec.Status == idem.StatusUncertain {
			out = append(out, rec)
		}
		return len(out) < limit
	})
	return out, err
}

// Stats implements idem.Statter. It reads every present row and decodes it
// as Get does, so a row counts as corrupt exactly when Get returns
// idem.ErrCorruptRecord for its key, and only rows that decode count per
// status. Bytes is pg_total_relation_size of the records table (released
// and expired rows the sweeper has not deleted yet included).
func (s *Store) Stats(ctx context.Context) (idem.StoreStats, error) {
	var st idem.StoreStats
	err := s.eachPresentRow(ctx, "stats", "", func(key string, rec *idem.Record, err error, now time.Time) bool {
		if err != nil {
			st.Corrupt++
			return true
		}
		st.Add(rec, now)
		return true
	})
	if err != nil {
		return st, err
	}
	err = s.queryRow(ctx, "stats", false, `SELECT pg_total_relation_size($1::regclass)`, []any{s.table}, &st.Bytes)
	return st, err
}

// eachPresentRow calls fn with every present row whose key starts with
// prefix, decoded as Get decodes it (err wraps idem.ErrCorruptRecord when
// the row does not decode), and the statement's time, until fn returns
// false.
func (s *Store) eachPresentRow(ctx context.Context, op, prefix string, fn func(key string, rec *idem.Record, err error, now time.Time) bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return backendError(op, err, false)
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, s.names(presentRowsSQL), prefix)
	if err != nil {
		return backendError(op, err, false)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key string
			r   rawRow
			now time.Time
		)
		if err := rows.Scan(&key, &r.status, &r.fingerprint, &r.token, &r.prevToken, &r.leaseExpiry, &r.response, &r.expiresAt, &r.policy, &now); err != nil {
			return backendError(op, err, false)
		}
		rec, err := r.record(key)
		if !fn(key, rec, err, now) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return backendError(op, err, false)
	}
	return nil
}

// names fills the table name into an admin statement.
func (s *Store) names(sql string) string {
	return strings.ReplaceAll(sql, "{{table}}", s.table)
}

// rawRow is a row scanned without conversions that can fail: the times are
// pgtype values, which hold infinity (a time.Time cannot).
type rawRow struct {
	status      string
	fingerprint []byte
	token       int64
	prevToken   int64
	leaseExpiry pgtype.Timestamptz
	response    []byte
	expiresAt   pgtype.Timestamptz
	policy      *string
}

// record decodes r as Get does: a time Get cannot scan (infinity) is
// corrupt, as Get reports it, and the rest is row.record.
func (r *rawRow) record(key string) (*idem.Record, error) {
	notTime := func(col string, ts pgtype.Timestamptz) error {
		return fmt.Errorf("%w: key %q: %s is %s, not a time", idem.ErrCorruptRecord, key, col, timeText(ts))
	}
	if !r.expiresAt.Valid || r.expiresAt.InfinityModifier != pgtype.Finite {
		return nil, notTime("expires_at", r.expiresAt)
	}
	w := row{status: r.status, fingerprint: r.fingerprint, token: r.token, prevToken: r.prevToken,
		response: r.response, expiresAt: r.expiresAt.Time, policy: r.policy}
	if r.leaseExpiry.Valid {
		if r.leaseExpiry.InfinityModifier != pgtype.Finite {
			return nil, notTime("lease_expires_at", r.leaseExpiry)
		}
		t := r.leaseExpiry.Time
		w.leaseExpiry = &t
	}
	return w.record(key)
}

// timeText renders a time column for an operator: RFC 3339 in UTC,
// "infinity", "-infinity" or "NULL".
func timeText(ts pgtype.Timestamptz) string {
	switch {
	case !ts.Valid:
		return "NULL"
	case ts.InfinityModifier == pgtype.Infinity:
		return "infinity"
	case ts.InfinityModifier == pgtype.NegativeInfinity:
		return "-infinity"
	}
	return ts.Time.UTC().Format(time.RFC3339Nano)
}

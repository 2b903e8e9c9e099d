package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/idem"
)

// row is a records-table row as scanned, before validation.
type row struct {
	status      string
	fingerprint []byte
	token       int64
	prevToken   int64
	leaseExpiry *time.Time
	response    []byte
	expiresAt   time.Time
	policy      *string // fp_policy; NULL: not named
}

// scanDest returns the scan destinations in the column order shared by
// getSQL and acquireSQL (after its two flags).
func (r *row) scanDest() []any {
	return []any{&r.status, &r.fingerprint, &r.token, &r.prevToken, &r.leaseExpiry, &r.response, &r.expiresAt, &r.policy}
}

// record decodes and validates r as the record of key. Every broken
// invariant (unknown status, fingerprint of the wrong length, token not
// positive, previous token negative or not below the token, undecodable
// response, missing lease expiry, a response in progress, a fingerprint
// policy id idem.ValidatePolicy refuses) returns an error
// wrapping idem.ErrCorruptRecord. The statements judge rows by the same
// rules (claimableSQL, fencedWhere), so a row this function rejects is
// never claimed or overwritten.
func (r *row) record(key string) (*idem.Record, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: key %q: %s", idem.ErrCorruptRecord, key, fmt.Sprintf(format, args...))
	}
	st, err := idem.ParseStatus(r.status)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", key, err)
	}
	rec := &idem.Record{Key: key, Status: st, ExpiresAt: r.expiresAt}
	if r.policy != nil {
		rec.FingerprintPolicy = *r.policy // checked by Validate
	}
	if len(r.fingerprint) != len(rec.Fingerprint) {
		return nil, corrupt("fingerprint is %d bytes, want %d", len(r.fingerprint), len(rec.Fingerprint))
	}
	copy(rec.Fingerprint[:], r.fingerprint)
	if r.token <= 0 {
		return nil, corrupt("fencing token %d is not positive", r.token)
	}
	rec.Token = idem.Token(r.token)
	if r.prevToken < 0 || r.prevToken >= r.token {
		return nil, corrupt("previous token %d is not in [0, token %d)", r.prevToken, r.token)
	}
	if r.leaseExpiry != nil {
		if st != idem.StatusInProgress {
			return nil, corrupt("%s record carries a lease expiry", st)
		}
		rec.LeaseExpiry = *r.leaseExpiry
	}
	if r.response != nil {
		if st == idem.StatusInProgress {
			return nil, corrupt("in-progress record carries a response")
		}
		resp, err := idem.DecodeResponse(r.response)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		rec.Response = &resp
	}
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	return rec, nil
}

// Get returns the record of key. A key that was never claimed, was released,
// or is past its ExpiresAt returns an error wrapping idem.ErrNotFound, even if
// the sweeper has not deleted its row yet. A row that does not decode returns
// an error wrapping idem.ErrCorruptRecord.
func (s *Store) Get(ctx context.Context, key string) (*idem.Record, error) {
	var r row
	err := s.queryRow(ctx, "get", false, s.sql.get, []any{key}, r.scanDest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: get %q: %w", key, idem.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return r.record(key)
}

// queryRow runs a one-row statement on a connection taken from the pool and
// scans its result into dest. A failure to get a connection is a backend
// error that is never ambiguous (nothing was sent). pgx.ErrNoRows is returned
// unwrapped so callers can test for it. A conversion failure is a corrupt
// record (key is args[0] when it is a string).
func (s *Store) queryRow(ctx context.Context, op string, write bool, sql string, args []any, dest ...any) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return backendError(op, err, false)
	}
	defer conn.Release()
	err = conn.QueryRow(ctx, sql, args...).Scan(dest...)
	switch {
	case err == nil, errors.Is(err, pgx.ErrNoRows):
		return err
	}
	key, _ := args[0].(string)
	return scanError(op, key, err, write)
}

// exec runs a statement that returns no rows, like queryRow, and returns the
// number of rows it affected.
func (s *Store) exec(ctx context.Context, op string, write bool, sql string, args ...any) (int64, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, backendError(op, err, false)
	}
	defer conn.Release()
	tag, err := conn.Exec(ctx, sql, args...)
	if err != nil {
		return 0, backendError(op, err, write)
	}
	return tag.RowsAffected(), nil
}

// pgToken converts a token to its column value. Tokens above MaxInt64 cannot
// have come from the sequence; ok is false for them and for zero.
func pgToken(t idem.Token) (v int64, ok bool) {
	if t == 0 || t > math.MaxInt64 {
		return 0, false
	}
	return int64(t), true
}

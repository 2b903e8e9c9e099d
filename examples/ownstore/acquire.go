package ownstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idembench/idembench/idem"
)

// MySQL error numbers Acquire starts over on.
const (
	errDuplicateKey = 1062 // another caller inserted the key first
	errDeadlock     = 1213
)

// maxAcquireRounds bounds how often Acquire starts over after losing a race.
const maxAcquireRounds = 10

// Acquire implements idem.Store: one transaction (see the package doc). A
// caller that loses the race to insert an absent key starts over and then
// finds the winner's row.
func (s *Store) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for round := 1; ; round++ {
		l, rec, err := s.tryAcquire(ctx, key, fp, leaseTTL)
		var myErr *mysql.MySQLError
		if round < maxAcquireRounds && errors.As(err, &myErr) &&
			(myErr.Number == errDuplicateKey || myErr.Number == errDeadlock) {
			continue
		}
		return l, rec, err
	}
}

// tryAcquire is one round of Acquire. A server error it returns unwrapped
// (duplicate key, deadlock) means the transaction was rolled back and may
// be tried again.
func (s *Store) tryAcquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, nil, backendError("acquire", err, false)
	}
	defer tx.Rollback() // a no-op after Commit

	var now time.Time
	if err := tx.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6)`).Scan(&now); err != nil {
		return nil, nil, backendError("acquire", err, false)
	}
	var r dbRow
	found := true
	err = r.scan(tx.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM ownstore_keys WHERE k = ? FOR UPDATE`, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		found = false
	case err != nil:
		return nil, nil, backendError("acquire", err, false)
	}
	var prev idem.Token
	if found && now.Before(r.expiresAt) {
		rec, err := r.record(key)
		if err != nil {
			return nil, nil, err
		}
		if rec.Status != idem.StatusInProgress || rec.LeaseLive(now) || rec.Fingerprint != fp {
			return nil, rec, nil
		}
		prev = rec.Token
	}

	token, err := nextToken(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	l := &idem.Lease{Key: key, Token: token, Fingerprint: fp, PrevToken: prev, Expiry: now.Add(leaseTTL)}
	keep := l.Expiry.Add(takeoverGrace)
	if found {
		_, err = tx.ExecContext(ctx, `UPDATE ownstore_keys
			SET status = 0, fingerprint = ?, token = ?, prev_token = ?, lease_expires_at = ?, response = NULL, expires_at = ?
			WHERE k = ?`, fp[:], uint64(token), uint64(prev), l.Expiry, keep, key)
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO ownstore_keys
			(k, status, fingerprint, token, prev_token, lease_expires_at, response, expires_at)
			VALUES (?, 0, ?, ?, 0, ?, NULL, ?)`, key, fp[:], uint64(token), l.Expiry, keep)
	}
	if err != nil {
		var myErr *mysql.MySQLError
		if errors.As(err, &myErr) && (myErr.Number == errDuplicateKey || myErr.Number == errDeadlock) {
			return nil, nil, myErr
		}
		return nil, nil, backendError("acquire", err, false)
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, backendError("acquire", err, true)
	}
	return l, nil, nil
}

// nextToken raises the global counter and returns its new value, inside tx:
// "UPDATE … SET v = LAST_INSERT_ID(v + 1)" reports the value it wrote
// without a second statement.
func nextToken(ctx context.Context, tx *sql.Tx) (idem.Token, error) {
	res, err := tx.ExecContext(ctx, `UPDATE ownstore_tokens SET v = LAST_INSERT_ID(v + 1) WHERE id = 1`)
	if err != nil {
		var myErr *mysql.MySQLError
		if errors.As(err, &myErr) && myErr.Number == errDeadlock {
			return 0, myErr
		}
		return 0, backendError("acquire: next token", err, false)
	}
	v, err := res.LastInsertId()
	if err != nil || v <= 0 {
		return 0, backendError("acquire: next token", errors.Join(err, errors.New("counter row missing")), false)
	}
	return idem.Token(v), nil
}

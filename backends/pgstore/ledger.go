package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idembench/idembench/idem"
)

// Querier runs statements: *pgxpool.Pool, *pgxpool.Conn, *pgx.Conn and pgx.Tx
// all implement it. ApplyFenced and FencedToken run their statement on it,
// so inside a transaction they commit or roll back with it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ApplyFenced is the fenced side-effect sink: it records in the ledger table
// (Options.Table+"_fence", created by Migrate) that the effect effectKey is
// applied under token, and reports applied = true, unless a higher token was
// recorded for effectKey before, in which case it changes nothing and reports
// false: the caller is a stale lease holder and must not apply the effect.
// An equal token applies again (the same execution retrying its own effect).
//
// The check and the record are one conditional upsert that locks the ledger
// row. Run it on the transaction that performs the effect (pass the pgx.Tx as
// q), so the effect and the recorded token commit together and a concurrent
// applier with another token waits for that commit. Run on the pool, the
// record commits at once and a crash before the effect leaves it recorded
// but not done.
//
// A zero token, or one above the sequence's range, is rejected with an error.
// When q is a pgx.Tx errors are plain backend errors (nothing commits before
// the transaction does); otherwise a failure after sending is also ambiguous.
func (s *Store) ApplyFenced(ctx context.Context, q Querier, effectKey string, token idem.Token) (applied bool, err error) {
	tok, ok := pgToken(token)
	if !ok {
		return false, fmt.Errorf("pgstore: apply fenced %q: invalid token %d", effectKey, token)
	}
	_, inTx := q.(pgx.Tx)
	err = q.QueryRow(ctx, s.sql.apply, effectKey, tok).Scan(&applied)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, backendError("apply fenced", err, !inTx)
	}
	return applied, nil
}

// FencedToken returns the highest token recorded for effectKey by
// ApplyFenced, and ok = false when none was. A recovery hook uses it to tell
// whether a previous holder's effect happened.
func (s *Store) FencedToken(ctx context.Context, q Querier, effectKey string) (token idem.Token, ok bool, err error) {
	var v int64
	err = q.QueryRow(ctx, s.sql.fenced, effectKey).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, backendError("fenced token", err, false)
	}
	if v <= 0 {
		return 0, false, fmt.Errorf("%w: ledger %q: token %d is not positive", idem.ErrCorruptRecord, effectKey, v)
	}
	return idem.Token(v), true, nil
}

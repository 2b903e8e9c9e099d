package pgstore

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idembench/idembench/idem"
)

// ErrCounterBehind is wrapped, together with idem.ErrCorruptRecord, by an
// Acquire that would claim a row whose token is not below the token
// sequence's next value: the sequence was reset, or restored from an older
// copy than the table. Issuing the sequence's value would give the key a
// token at or below one it had, which a fenced sink could confuse with a
// stale holder's, so Acquire fails closed and leaves the row alone. The
// fix is to move the sequence past every stored token, once, e.g.
//
//	SELECT setval('idem_keys_token_seq', (SELECT max(token) FROM idem_keys));
//
// (PostgreSQL cannot move a sequence forward atomically with the nextval
// calls of other sessions, so the store does not do it by itself.)
var ErrCounterBehind = errors.New("pgstore: token sequence is behind a stored token")

// backendError wraps err, a failure of statement op, as an idem.ErrBackend
// error (fail closed). When write is true and the statement may have reached
// the server and run there, it is also marked ambiguous: the outcome is
// unknown, not failed. A statement may have run unless pgconn.SafeToRetry
// says nothing was sent, or the server itself reported an error (a
// *pgconn.PgError: in autocommit the statement was rolled back).
func backendError(op string, err error, write bool) error {
	if err == nil {
		return nil
	}
	wrapped := idem.BackendError("pgstore: "+op, err)
	if write && mayHaveRun(err) {
		return idem.MarkAmbiguous(wrapped)
	}
	return wrapped
}

// mayHaveRun reports whether a statement that failed with err may
// nevertheless have been executed by the server.
func mayHaveRun(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false
	}
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		return false
	}
	return !pgconn.SafeToRetry(err)
}

// scanError classifies an error from Row.Scan: a value that cannot be
// converted to its Go type is a corrupt record; anything else (the
// connection failed while the row was read) is a backend error.
func scanError(op, key string, err error, write bool) error {
	var argErr pgx.ScanArgError
	if errors.As(err, &argErr) {
		return fmt.Errorf("%w: key %q: %v", idem.ErrCorruptRecord, key, err)
	}
	return backendError(op, err, write)
}

// leaseLost is the error of a fenced write that matched no row.
func leaseLost(op string, l *idem.Lease) error {
	return fmt.Errorf("pgstore: %s key %q token %d: %w", op, l.Key, l.Token, idem.ErrLeaseLost)
}

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idembench/idembench/idem"
)

// Heartbeat extends l to the server's now plus leaseTTL and sets l.Expiry to
// the new expiry. It returns an error wrapping idem.ErrLeaseLost, and changes
// nothing, when the record is not in progress with l.Token: taken over,
// completed, failed, released or past its ExpiresAt. A lease that expired
// but was not taken over is renewed. leaseTTL must be positive.
func (s *Store) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	if err := idem.ValidateLeaseTTL(leaseTTL); err != nil {
		return fmt.Errorf("pgstore: heartbeat %q: %w", l.Key, err)
	}
	tok, ok := pgToken(l.Token)
	if !ok {
		return leaseLost("heartbeat", l)
	}
	var expiry time.Time
	err := s.queryRow(ctx, "heartbeat", true, s.sql.heartbeat,
		[]any{l.Key, tok, leaseTTL, s.opts.TakeoverGrace}, &expiry)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.lostOrCorrupt(ctx, "heartbeat", l)
	}
	if err != nil {
		return err
	}
	l.Expiry = expiry
	return nil
}

// Complete stores resp as the completed response of l's key, kept for
// retention from the server's now. It is fenced: when the record is not in
// progress with l.Token it returns an error wrapping idem.ErrLeaseLost and
// changes nothing. A negative retention is an error; zero stores a record
// that is absent at once. The response size is not checked here (the engine
// does); a response the encoding cannot hold never occurs.
func (s *Store) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, nil, "complete", l, idem.StatusCompleted, resp, retention)
}

// Fail stores resp as the permanent failure of l's key, kept for retention
// and replayed like a completion. Fenced like Complete.
func (s *Store) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, nil, "fail", l, idem.StatusFailed, resp, retention)
}

// CompleteTx is Complete run on tx: the completed record commits or rolls
// back with the rest of tx. Fenced like Complete: zero rows matched returns
// an error wrapping idem.ErrLeaseLost; the caller must then roll tx back so
// that its business writes do not commit. At READ COMMITTED the update waits
// for, then re-checks, a concurrent take-over of the row; at REPEATABLE READ
// or SERIALIZABLE a row changed since tx's snapshot makes PostgreSQL fail the
// statement with a serialization error instead (returned as a backend error).
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, tx, "complete", l, idem.StatusCompleted, resp, retention)
}

// finish runs finishSQL on tx, or autocommitted on the pool when tx is nil.
// An autocommitted statement that fails after sending is ambiguous; inside a
// transaction nothing is decided before COMMIT, so it is not.
func (s *Store) finish(ctx context.Context, tx pgx.Tx, op string, l *idem.Lease, st idem.Status, resp idem.Response, retention time.Duration) error {
	if retention < 0 {
		return fmt.Errorf("pgstore: %s %q: negative retention %v", op, l.Key, retention)
	}
	tok, ok := pgToken(l.Token)
	if !ok {
		return leaseLost(op, l)
	}
	args := []any{l.Key, tok, st.String(), idem.EncodeResponse(&resp), retention}
	var n int64
	var err error
	if tx == nil {
		n, err = s.exec(ctx, op, true, s.sql.finish, args...)
	} else {
		var tag pgconn.CommandTag
		tag, err = tx.Exec(ctx, s.sql.finish, args...)
		n = tag.RowsAffected()
		err = backendError(op, err, false)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return s.lostOrCorrupt(ctx, op, l)
	}
	return nil
}

// Release gives up l so the request can be retried: the record becomes
// absent at once (Get returns idem.ErrNotFound, the next Acquire claims the
// key with a higher token and no PrevToken). Fenced like Complete. The row is
// kept as a tombstone until the sweeper deletes it.
func (s *Store) Release(ctx context.Context, l *idem.Lease) error {
	tok, ok := pgToken(l.Token)
	if !ok {
		return leaseLost("release", l)
	}
	n, err := s.exec(ctx, "release", true, s.sql.release, l.Key, tok)
	if err != nil {
		return err
	}
	if n == 0 {
		return s.lostOrCorrupt(ctx, "release", l)
	}
	return nil
}

// lostOrCorrupt is the error of a fenced write that matched no row: one
// wrapping idem.ErrCorruptRecord when the key's row does not decode (the
// write refused to overwrite it), else one wrapping idem.ErrLeaseLost. It
// costs a read on the lease-lost path only.
func (s *Store) lostOrCorrupt(ctx context.Context, op string, l *idem.Lease) error {
	if _, err := s.Get(ctx, l.Key); errors.Is(err, idem.ErrCorruptRecord) {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	return leaseLost(op, l)
}

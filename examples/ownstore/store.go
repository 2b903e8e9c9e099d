package ownstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idembench/idembench/idem"
)

// Status codes of the status column.
const (
	statusInProgress = 0
	statusCompleted  = 1
	statusFailed     = 2
)

// takeoverGrace is how long an in-progress row is kept after its lease
// expired, so that a take-over is recognised.
const takeoverGrace = 24 * time.Hour

// Store is an idem.Store on MySQL or MariaDB. It is safe for concurrent use.
type Store struct {
	db *sql.DB
}

var (
	_ idem.Store   = (*Store)(nil)
	_ idem.Sweeper = (*Store)(nil)
)

// Open connects to the database named by dsn, a go-sql-driver/mysql DSN such
// as "root@tcp(127.0.0.1:3306)/test", checks that it answers and creates
// the tables if they are missing. It sets the connection options the store
// relies on (parseTime, UTC, clientFoundRows) whatever dsn says. A dsn that
// does not parse is an error; a server that does not answer is an error
// wrapping idem.ErrBackend.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("ownstore: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("ownstore: %w", err)
	}
	db := sql.OpenDB(connector)
	s := &Store{db: db}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, idem.BackendError("ownstore: connect", err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the connection pool. The Store must not be used afterwards.
func (s *Store) Close() error { return s.db.Close() }

// migrate creates the tables and the counter row if they are missing.
func (s *Store) migrate(ctx context.Context) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ownstore_tokens (id TINYINT PRIMARY KEY, v BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
		`INSERT IGNORE INTO ownstore_tokens (id, v) VALUES (1, 0)`,
		`CREATE TABLE IF NOT EXISTS ownstore_keys (
			k                VARBINARY(255) PRIMARY KEY,
			status           TINYINT NOT NULL,
			fingerprint      BINARY(32) NOT NULL,
			token            BIGINT UNSIGNED NOT NULL,
			prev_token       BIGINT UNSIGNED NOT NULL,
			lease_expires_at DATETIME(6) NULL,
			response         LONGBLOB NULL,
			expires_at       DATETIME(6) NOT NULL,
			KEY (expires_at)
		) ENGINE=InnoDB`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return idem.BackendError("ownstore: migrate", err)
		}
	}
	return nil
}

// micros is d in microseconds, the unit of the statements' intervals.
func micros(d time.Duration) int64 { return d.Microseconds() }

// backendError wraps err, a failure of statement op, as an idem.ErrBackend
// error; a write that may have run on the server (its connection failed
// after the statement was sent) is marked ambiguous too. An error the server
// reported (*mysql.MySQLError) means the statement did not run.
func backendError(op string, err error, write bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if !write {
			return err
		}
	}
	wrapped := idem.BackendError("ownstore: "+op, err)
	var myErr *mysql.MySQLError
	if write && !errors.As(err, &myErr) {
		return idem.MarkAmbiguous(wrapped)
	}
	return wrapped
}

// leaseLost is the error of a fenced write that matched no row.
func leaseLost(op string, l *idem.Lease) error {
	return fmt.Errorf("ownstore: %s key %q token %d: %w", op, l.Key, l.Token, idem.ErrLeaseLost)
}

// Heartbeat implements idem.Store: one fenced UPDATE.
func (s *Store) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	local := time.Now()
	res, err := s.db.ExecContext(ctx, `UPDATE ownstore_keys
		SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,
		    expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
		WHERE k = ? AND token = ? AND status = 0 AND expires_at > UTC_TIMESTAMP(6)`,
		micros(leaseTTL), micros(leaseTTL+takeoverGrace), l.Key, uint64(l.Token))
	if err := fenced(res, err, "heartbeat", l); err != nil {
		return err
	}
	l.Expiry = local.Add(leaseTTL)
	return nil
}

// Complete implements idem.Store: one fenced UPDATE.
func (s *Store) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "complete", statusCompleted, l, resp, retention)
}

// Fail implements idem.Store: one fenced UPDATE.
func (s *Store) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "fail", statusFailed, l, resp, retention)
}

func (s *Store) finish(ctx context.Context, op string, status int, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE ownstore_keys
		SET status = ?, response = ?, lease_expires_at = NULL,
		    expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
		WHERE k = ? AND token = ? AND status = 0 AND expires_at > UTC_TIMESTAMP(6)`,
		status, idem.EncodeResponse(&resp), micros(retention), l.Key, uint64(l.Token))
	return fenced(res, err, op, l)
}

// Release implements idem.Store: one fenced DELETE.
func (s *Store) Release(ctx context.Context, l *idem.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM ownstore_keys
		WHERE k = ? AND token = ? AND status = 0 AND expires_at > UTC_TIMESTAMP(6)`,
		l.Key, uint64(l.Token))
	return fenced(res, err, "release", l)
}

// fenced turns the result of a fenced write into its error: nil if it
// matched the row, idem.ErrLeaseLost if it matched none.
func fenced(res sql.Result, err error, op string, l *idem.Lease) error {
	if err != nil {
		return backendError(op, err, true)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return backendError(op, err, true)
	}
	if n == 0 {
		return leaseLost(op, l)
	}
	return nil
}

// Get implements idem.Store: the live record of key, or idem.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (*idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var r dbRow
	if err := r.scan(s.db.QueryRowContext(ctx, `SELECT `+recordColumns+`
		FROM ownstore_keys WHERE k = ? AND expires_at > UTC_TIMESTAMP(6)`, key)); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, idem.ErrNotFound
		}
		return nil, backendError("get", err, false)
	}
	return r.record(key)
}

// Sweep implements idem.Sweeper: it deletes expired rows, 1000 at a time,
// and returns how many it deleted.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res, err := s.db.ExecContext(ctx, `DELETE FROM ownstore_keys WHERE expires_at <= UTC_TIMESTAMP(6) LIMIT 1000`)
		if err != nil {
			return total, backendError("sweep", err, true)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, backendError("sweep", err, true)
		}
		total += int(n)
		if n < 1000 {
			return total, nil
		}
	}
}

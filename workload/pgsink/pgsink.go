// Package pgsink holds the effect sinks whose ledger lives in PostgreSQL:
// Sink (plain or fenced, for runs whose effects must outlive a worker
// process) and TxSink (Postgres transactional mode: the effect commits in
// the transaction of the fenced completion, pgstore.DoTx). Both write one
// row per applied effect to the effects table (EffectsTable) and read it
// back with one reader. Fencing is pgstore's own fenced sink
// (Store.ApplyFenced on the records table's fence table), not a copy.
package pgsink

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// EffectsTable holds one row per applied (committed) effect.
const EffectsTable = "idembench_effects"

// DefaultTable is the records table whose fence table the sinks use when
// Options.Table is empty: the harness's own.
const DefaultTable = "idembench_keys"

// minConns is the least pool size: every client may hold a connection.
const minConns = 32

var effectsDDL = []string{
	`CREATE TABLE IF NOT EXISTS ` + EffectsTable + ` (
	key   text   NOT NULL,
	exec  text   NOT NULL,
	token bigint NOT NULL,
	status int   NOT NULL,
	body  bytea  NOT NULL,
	PRIMARY KEY (key, exec)
)`,
	`ALTER TABLE ` + EffectsTable + ` ADD COLUMN IF NOT EXISTS at bigint NOT NULL DEFAULT 0`,
}

const insertEffect = `INSERT INTO ` + EffectsTable + ` (key, exec, token, status, body, at) VALUES ($1, $2, $3, $4, $5, $6)`

// Options configure the sinks. The zero value is a plain sink on the
// fence table of DefaultTable.
type Options struct {
	// Fenced makes Sink reject an effect whose token is lower than the
	// highest applied for its key, and Recover raise that fence first.
	// TxSink is always fenced.
	Fenced bool
	// Table is the pgstore records table (pgstore.Options.Table) whose
	// fence table the sink uses; empty means DefaultTable.
	Table string
}

// conn is what both sinks stand on: a pool, a pgstore on it (for
// ApplyFenced and DoTx) and the migrated effects table.
type conn struct {
	pool *pgxpool.Pool
	st   *pgstore.Store
}

// open connects to url, migrates the records table, its fence table and the
// effects table. Errors say whether the URL or the server failed.
func open(ctx context.Context, url string, opts Options) (conn, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return conn{}, fmt.Errorf("pgsink: %w", err)
	}
	cfg.MaxConns = max(cfg.MaxConns, minConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return conn{}, fmt.Errorf("pgsink: %w", err)
	}
	table := opts.Table
	if table == "" {
		table = DefaultTable
	}
	st, err := pgstore.New(pool, pgstore.Options{Table: table})
	if err == nil {
		err = st.Migrate(ctx)
	}
	for _, q := range effectsDDL {
		if err == nil {
			_, err = pool.Exec(ctx, q)
		}
	}
	if err != nil {
		pool.Close()
		return conn{}, fmt.Errorf("pgsink: migrate: %w", err)
	}
	return conn{pool: pool, st: st}, nil
}

// ReadLedger returns the committed effects of every key starting with
// prefix, in apply order (the keys are not needed: the table selects by
// prefix).
func (c conn) ReadLedger(ctx context.Context, prefix string, _ []string) ([]workload.Applied, error) {
	return c.readEffects(ctx, "starts_with(key, $1)", prefix, 0)
}

// readEffects is the one reader of the effects table: the rows whose key
// matches where (a condition on $1 = arg), in apply order, at most limit
// of them (zero: all).
func (c conn) readEffects(ctx context.Context, where, arg string, limit int) ([]workload.Applied, error) {
	q := `SELECT key, exec, token, at, status, body FROM ` + EffectsTable + ` WHERE ` + where + ` ORDER BY at`
	if limit > 0 {
		q += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := c.pool.Query(ctx, q, arg)
	if err != nil {
		return nil, fmt.Errorf("pgsink: read ledger: %w", err)
	}
	defer rows.Close()
	var out []workload.Applied
	for rows.Next() {
		var e workload.Applied
		var tok int64
		if err := rows.Scan(&e.Key, &e.Exec, &tok, &e.At, &e.Response.Status, &e.Response.Body); err != nil {
			return nil, fmt.Errorf("pgsink: read ledger: %w", err)
		}
		e.Token = idem.Token(tok)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgsink: read ledger: %w", err)
	}
	return out, nil
}

// Close closes the sink's pool.
func (c conn) Close() error {
	c.pool.Close()
	return nil
}

// applyIn admits e's token with pgstore's fenced sink on tx and, when
// admitted, inserts its row in the same transaction.
func (c conn) applyIn(ctx context.Context, tx pgx.Tx, e workload.Effect) (bool, error) {
	ok, err := c.st.ApplyFenced(ctx, tx, e.Key, e.Token)
	if err != nil || !ok {
		return false, err
	}
	if _, err := tx.Exec(ctx, insertEffect, e.Key, e.Exec, int64(e.Token), e.Response.Status, e.Response.Body, history.Now()); err != nil {
		return false, fmt.Errorf("insert effect: %w", err)
	}
	return true, nil
}

// Sink appends applied effects to EffectsTable; fenced, the token goes
// through pgstore's ApplyFenced first, in the same transaction. It
// implements workload.LedgerReader and workload.Recoverer.
type Sink struct {
	conn
	fenced bool
}

var (
	_ workload.LedgerReader = (*Sink)(nil)
	_ workload.Recoverer    = (*Sink)(nil)
)

// Open connects to the server at url and migrates the tables. Close the
// sink after the run.
func Open(ctx context.Context, url string, opts Options) (*Sink, error) {
	c, err := open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return &Sink{conn: c, fenced: opts.Fenced}, nil
}

// Name returns workload.SinkFenced or workload.SinkPlain.
func (s *Sink) Name() string {
	if s.fenced {
		return workload.SinkFenced
	}
	return workload.SinkPlain
}

// Apply inserts e's row; fenced, only when ApplyFenced admits its token.
func (s *Sink) Apply(ctx context.Context, e workload.Effect) (applied bool, err error) {
	if !s.fenced {
		_, err := s.pool.Exec(ctx, insertEffect, e.Key, e.Exec, int64(e.Token), e.Response.Status, e.Response.Body, history.Now())
		if err != nil {
			return false, fmt.Errorf("pgsink: apply: %w", err)
		}
		return true, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		applied, err = s.applyIn(ctx, tx, e)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("pgsink: apply: %w", err)
	}
	return applied, nil
}

// Recover looks up the first applied effect of key. Fenced, it first raises
// the fence to token in a transaction of its own ("fence, then look"): a
// holder stopped inside its apply transaction holds the fence row's lock,
// so this waits until that holder commits (its effect is then found) or
// rolls back; a holder that has not reached its apply yet is rejected later
// by the raised fence. Looking first would miss an uncommitted apply and run
// the effect a second time.
func (s *Sink) Recover(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	if s.fenced {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			_, err := s.st.ApplyFenced(ctx, tx, key, token)
			return err
		})
		if err != nil {
			return idem.Response{}, false, fmt.Errorf("pgsink: raise fence: %w", err)
		}
	}
	first, err := s.readEffects(ctx, "key = $1", key, 1)
	if err != nil || len(first) == 0 {
		return idem.Response{}, false, err
	}
	return first[0].Response, true, nil
}

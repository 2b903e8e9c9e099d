package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// pgEffectsTable is the ledger of --sink tx: one row per committed effect.
const pgEffectsTable = "idembench_effects"

const pgEffectsDDL = `CREATE TABLE IF NOT EXISTS ` + pgEffectsTable + ` (
	key   text   NOT NULL,
	exec  text   NOT NULL,
	token bigint NOT NULL,
	status int   NOT NULL,
	body  bytea  NOT NULL,
	PRIMARY KEY (key, exec)
)`

// pgTxSink is --sink tx: Postgres transactional mode. Every execution runs
// through pgstore.DoTx; the business effect is a row of pgEffectsTable
// written, after pgstore.ApplyFenced admitted its token, in the transaction
// that also stores the fenced completion. A stale holder's completion is
// refused, so its transaction, effect included, rolls back.
type pgTxSink struct {
	st     *pgstore.Store
	pool   *pgxpool.Pool
	ledger *workload.Ledger
	// slots bounds the open transactions to half the pool, so that a
	// heartbeat or an Acquire always finds a connection.
	slots chan struct{}
}

var _ workload.TxSink = (*pgTxSink)(nil)

type txKey struct{}

// newPgTxSink migrates the effects table and returns the sink.
func newPgTxSink(ctx context.Context, st *pgstore.Store, pool *pgxpool.Pool) (*pgTxSink, error) {
	if err := migrateEffects(ctx, pool); err != nil {
		return nil, err
	}
	n := max(int(pool.Config().MaxConns)/2, 1)
	return &pgTxSink{st: st, pool: pool, ledger: workload.NewLedger(), slots: make(chan struct{}, n)}, nil
}

func (s *pgTxSink) Name() string             { return workload.SinkTx }
func (s *pgTxSink) Ledger() *workload.Ledger { return s.ledger }

// Apply writes e in the transaction of the execution that ctx belongs to,
// after the fenced ledger admitted its token. It reports false when a
// higher token was admitted for e.Key before. Outside Do it is an error.
func (s *pgTxSink) Apply(ctx context.Context, e workload.Effect) (bool, error) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	if !ok {
		return false, errors.New("tx sink: effect outside a transaction")
	}
	applied, err := s.st.ApplyFenced(ctx, tx, e.Key, e.Token)
	if err != nil || !applied {
		return false, err
	}
	_, err = tx.Exec(ctx, pgInsertEffect, e.Key, e.Exec, int64(e.Token), e.Response.Status, e.Response.Body, history.Now())
	if err != nil {
		return false, fmt.Errorf("tx sink: insert effect: %w", err)
	}
	return true, nil
}

// Do runs fn as one execution of key with pgstore.DoTx and calls the fault
// hook at the engine's points. A crash (hook error) before the commit rolls
// the transaction back and releases the key: unlike a killed process it
// does not leave the lease to expire, which changes liveness timing, not
// safety. With a hook the heartbeat is off, so that a pause inside the
// transaction stalls the holder's heartbeat too, as a stopped process's
// would; the scenarios with faults keep their handlers far below the lease.
func (s *pgTxSink) Do(ctx context.Context, key string, fp idem.Fingerprint, o workload.TxEngine, fn idem.Func) (idem.Result, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return idem.Result{}, ctx.Err()
	}
	defer func() { <-s.slots }()
	opts := pgstore.TxOptions{LeaseTTL: o.LeaseTTL, Retention: o.Retention, HeartbeatInterval: o.Heartbeat}
	if o.Hook != nil {
		opts.HeartbeatInterval = -1
	}
	res, err := s.st.DoTx(ctx, key, fp, opts, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
		l, _ := idem.LeaseFrom(ctx)
		for _, p := range []idem.Point{idem.PointAfterAcquire, idem.PointBeforeFn} {
			if err := at(ctx, o.Hook, p, l); err != nil {
				return idem.Response{}, err
			}
		}
		resp, err := fn(context.WithValue(ctx, txKey{}, tx))
		if err != nil {
			return resp, err
		}
		return resp, at(ctx, o.Hook, idem.PointAfterFn, l)
	})
	if err == nil && !res.Replayed {
		err = at(ctx, o.Hook, idem.PointAfterComplete, idem.Lease{Key: key, Token: res.Token})
	}
	return res, err
}

// at runs hook at p; an error aborts the execution as Engine.Do does.
func at(ctx context.Context, hook idem.Hook, p idem.Point, l idem.Lease) error {
	if hook == nil {
		return nil
	}
	if err := hook(ctx, p, l); err != nil {
		return fmt.Errorf("%w at %s: %w", idem.ErrAborted, p, err)
	}
	return nil
}

// load reads the committed effects of the run's keys (they all start with
// prefix) into the sink's ledger. After it, an effect the table does not
// hold was rolled back: lookup answers for every effect.
func (s *pgTxSink) load(ctx context.Context, prefix string) error {
	rows, err := s.pool.Query(ctx, `SELECT key, exec, token, status, body FROM `+pgEffectsTable+` WHERE starts_with(key, $1) ORDER BY token`, prefix)
	if err != nil {
		return fmt.Errorf("tx sink: read ledger: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e workload.Effect
		var tok int64
		if err := rows.Scan(&e.Key, &e.Exec, &tok, &e.Response.Status, &e.Response.Body); err != nil {
			return fmt.Errorf("tx sink: read ledger: %w", err)
		}
		e.Token = idem.Token(tok)
		s.ledger.Record(e, true)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tx sink: read ledger: %w", err)
	}
	return nil
}

// lookup is the ledger lookup for history.ResolveEffects after load: the
// table is the whole truth, so an effect it lacks was not applied.
func (s *pgTxSink) lookup(key, exec string) (applied, ok bool) {
	applied, _ = s.ledger.Lookup(key, exec)
	return applied, true
}

// entries returns the committed effects of the keys starting with prefix.
func (s *pgTxSink) entries(ctx context.Context, prefix string, _ []string) ([]ledgerEntry, error) {
	return pgEntries(ctx, s.pool, prefix)
}

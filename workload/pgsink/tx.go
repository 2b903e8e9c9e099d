package pgsink

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/backends/pgstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// TxSink is Postgres transactional mode (--sink tx). Every execution runs
// through pgstore.DoTx; the business effect is a row of EffectsTable
// written, after pgstore's ApplyFenced admitted its token, in the
// transaction that also stores the fenced completion. A stale holder's
// completion is refused, so its transaction, effect included, rolls back.
// It implements workload.TxSink and workload.LedgerReader.
type TxSink struct {
	conn
	// slots bounds the open transactions to half the pool, so that a
	// heartbeat or an Acquire always finds a connection.
	slots chan struct{}
}

var (
	_ workload.TxSink       = (*TxSink)(nil)
	_ workload.LedgerReader = (*TxSink)(nil)
)

type txKey struct{}

// OpenTx connects to the server at url and migrates the tables; the
// executions it runs use the records table opts.Table, which must be the
// table of the store under test. Close the sink after the run.
func OpenTx(ctx context.Context, url string, opts Options) (*TxSink, error) {
	c, err := open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	n := max(int(c.pool.Config().MaxConns)/2, 1)
	return &TxSink{conn: c, slots: make(chan struct{}, n)}, nil
}

// Name returns workload.SinkTx.
func (s *TxSink) Name() string { return workload.SinkTx }

// Apply writes e in the transaction of the execution that ctx belongs to,
// after the fence admitted its token. It reports false when a higher token
// was admitted for e.Key before. Outside Do it is an error.
func (s *TxSink) Apply(ctx context.Context, e workload.Effect) (bool, error) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	if !ok {
		return false, errors.New("pgsink: tx sink: effect outside a transaction")
	}
	applied, err := s.applyIn(ctx, tx, e)
	if err != nil {
		return false, fmt.Errorf("pgsink: tx sink: %w", err)
	}
	return applied, nil
}

// Do runs fn as one execution of key with pgstore.DoTx and calls the fault
// hook at the engine's points. A crash (hook error) before the commit rolls
// the transaction back and releases the key: unlike a killed process it
// does not leave the lease to expire, which changes liveness timing, not
// safety. With a hook the heartbeat is off, so that a pause inside the
// transaction stalls the holder's heartbeat too, as a stopped process's
// would; the scenarios with faults keep their handlers far below the lease.
func (s *TxSink) Do(ctx context.Context, key string, fp idem.Fingerprint, o workload.TxEngine, fn idem.Func) (idem.Result, error) {
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

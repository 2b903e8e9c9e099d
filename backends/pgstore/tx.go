package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idembench/idembench/idem"
)

// Defaults of TxOptions, the same as the engine's.
const (
	DefaultTxLeaseTTL  = idem.DefaultLeaseTTL
	DefaultTxRetention = idem.DefaultRetention
)

// TxFunc is the business function of DoTx. It runs once per claimed
// execution, with the lease in ctx (idem.LeaseFrom) and tx, the transaction
// that also records the completion. It must do its database writes on tx and
// must not commit or roll tx back. ctx is cancelled, with cause
// idem.ErrLeaseLost, when a heartbeat finds the lease taken over.
type TxFunc func(ctx context.Context, tx pgx.Tx) (idem.Response, error)

// TxOptions configures one DoTx call. The zero value is valid: every zero
// field takes the default stated on it. The defaults match idem.New's.
type TxOptions struct {
	// LeaseTTL is the lease duration. Default 30s. It also bounds the
	// completion, the COMMIT and the clean-up after fn returns, which run on
	// a context detached from the caller's so that a caller giving up does
	// not turn a finished execution into an ambiguous one.
	LeaseTTL time.Duration
	// Retention is how long the completed or failed record is kept and
	// replayed. Default 24h.
	Retention time.Duration
	// HeartbeatInterval is the period at which a goroutine renews the lease
	// (on another pooled connection) while fn runs. Default LeaseTTL/3;
	// negative disables it. It is always disabled at an isolation level above
	// READ COMMITTED, where a renewal would make the final fenced update fail
	// with a serialization error: there LeaseTTL must cover fn.
	HeartbeatInterval time.Duration
	// MaxResponseSize caps the response, as idem.Response.CheckSize: 0 means
	// idem.DefaultMaxResponseSize, negative means unlimited. Like Engine.Do,
	// a larger response rolls fn's writes back, is stored as a failure with
	// status 500 naming the reason, and DoTx returns ErrResponseTooLarge.
	MaxResponseSize int
	// Permanent classifies an error of fn: true stores the response fn
	// returned with it as a permanent failure (replayed like a completion);
	// false releases the key for a retry. Default idem.IsPermanent.
	Permanent func(err error) bool
	// Tx is passed to BeginTx (isolation level, access mode). Default READ
	// COMMITTED, the server default.
	Tx pgx.TxOptions
}

func (o TxOptions) withDefaults() TxOptions {
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultTxLeaseTTL
	}
	if o.Retention <= 0 {
		o.Retention = DefaultTxRetention
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = o.LeaseTTL / 3
	}
	if o.Tx.IsoLevel != "" && o.Tx.IsoLevel != pgx.ReadCommitted {
		o.HeartbeatInterval = -1
	}
	if o.Permanent == nil {
		o.Permanent = idem.IsPermanent
	}
	return o
}

// DoTx runs fn at most once per key in transactional mode: the business
// writes fn makes on its pgx.Tx and the completed record commit in one
// transaction, or neither does. It follows the rules of idem.Engine.Do, with
// the completion moved into fn's transaction:
//
//   - An invalid key returns idem.ErrInvalidKey. A record with another
//     fingerprint returns idem.ErrFingerprintMismatch. A completed or failed
//     record is replayed (Result.Replayed, Result.Failed; fn does not run).
//     A live lease returns idem.ErrInProgress at once; DoTx does not wait
//     (use WaitChange and call again).
//   - Otherwise DoTx claims the key, begins a transaction, runs fn with the
//     lease in ctx (idem.LeaseFrom) while a heartbeat renews it, then runs
//     the fenced completion (CompleteTx) in the same transaction and
//     commits. When the lease was taken over meanwhile, the fenced update
//     matches no row, the transaction rolls back with fn's writes, and DoTx
//     returns idem.ErrLeaseLost; so does a heartbeat that finds the lease
//     gone, which also cancels fn's ctx with that cause.
//   - An error of fn rolls the transaction back. A permanent one (see
//     TxOptions.Permanent) stores fn's response with Fail and is returned
//     with Result.Failed; a retryable one releases the key and is returned.
//     A panic in fn rolls back, releases, and panics again.
//   - A COMMIT that fails after it was sent returns an ambiguous backend
//     error and keeps the lease: the transaction may have committed, so only
//     a take-over after LeaseTTL may run the request again.
//
// Unlike Engine.Do, DoTx has no recovery hook: a previous holder's writes
// either committed with its completion (and are replayed) or rolled back.
func (s *Store) DoTx(ctx context.Context, key string, fp idem.Fingerprint, opts TxOptions, fn TxFunc) (idem.Result, error) {
	opts = opts.withDefaults()
	lease, rec, err := s.Acquire(ctx, key, fp, opts.LeaseTTL)
	if err != nil {
		return idem.Result{}, err
	}
	if rec != nil {
		return replay(rec, fp)
	}
	return s.runTx(ctx, lease, opts, fn)
}

// replay answers from an existing record.
func replay(rec *idem.Record, fp idem.Fingerprint) (idem.Result, error) {
	switch {
	case rec.Fingerprint != fp:
		return idem.Result{}, fmt.Errorf("pgstore: key %q: %w", rec.Key, idem.ErrFingerprintMismatch)
	case rec.Status == idem.StatusInProgress:
		return idem.Result{}, fmt.Errorf("pgstore: key %q: %w", rec.Key, idem.ErrInProgress)
	}
	return idem.Result{
		Response: *rec.Response,
		Token:    rec.Token,
		Replayed: true,
		Failed:   rec.Status == idem.StatusFailed,
	}, nil
}

// runTx runs fn under l in a transaction that ends with the fenced
// completion.
func (s *Store) runTx(ctx context.Context, l *idem.Lease, opts TxOptions, fn TxFunc) (idem.Result, error) {
	res := idem.Result{Token: l.Token}
	fnCtx, cancel := context.WithCancelCause(idem.WithLease(ctx, l))
	defer cancel(nil)
	stopHeartbeat := s.heartbeat(ctx, *l, opts, cancel)
	defer stopHeartbeat()

	tx, err := s.pool.BeginTx(ctx, opts.Tx)
	if err != nil {
		stopHeartbeat()
		return res, errors.Join(backendError("begin", err, false), s.cleanup(ctx, opts, nil, l))
	}
	defer func() {
		if p := recover(); p != nil {
			stopHeartbeat()
			_ = s.cleanup(ctx, opts, tx, l)
			panic(p)
		}
	}()

	resp, fnErr := fn(fnCtx, tx)
	stopHeartbeat() // before the fenced update, which would make a renewal wait
	if cause := context.Cause(fnCtx); errors.Is(cause, idem.ErrLeaseLost) {
		_ = s.cleanup(ctx, opts, tx, nil)
		return res, errors.Join(cause, fnErr)
	}
	fctx, fcancel := finishContext(ctx, opts)
	defer fcancel()
	if fnErr != nil {
		if !opts.Permanent(fnErr) {
			return res, errors.Join(fnErr, s.cleanup(ctx, opts, tx, l))
		}
		_ = s.cleanup(ctx, opts, tx, nil)
		res.Failed, res.Response = true, resp
		return res, errors.Join(fnErr, s.failTx(fctx, l, resp, opts))
	}
	if sizeErr := resp.CheckSize(opts.MaxResponseSize); sizeErr != nil {
		_ = s.cleanup(ctx, opts, tx, nil)
		res.Failed, res.Response = true, resp
		return res, errors.Join(sizeErr, s.failTx(fctx, l, resp, opts))
	}

	res.Response = resp
	if err := s.CompleteTx(fctx, tx, l, resp, opts.Retention); err != nil {
		if errors.Is(err, idem.ErrLeaseLost) {
			_ = s.cleanup(ctx, opts, tx, nil)
			return res, err
		}
		return res, errors.Join(err, s.cleanup(ctx, opts, tx, l))
	}
	if err := tx.Commit(fctx); err != nil {
		if mayHaveRun(err) {
			return res, idem.MarkAmbiguous(backendError("commit", err, false))
		}
		return res, errors.Join(backendError("commit", err, false), s.cleanup(ctx, opts, nil, l))
	}
	return res, nil
}

// finishContext is the context of the statements that record an outcome:
// detached from the caller's cancellation, bounded by the lease TTL.
func finishContext(ctx context.Context, opts TxOptions) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), opts.LeaseTTL)
}

// failTx stores resp as the permanent failure of l, after fn's transaction
// rolled back. A response above the size cap is replaced, as Engine.Do does,
// by a 500 that names the reason.
func (s *Store) failTx(ctx context.Context, l *idem.Lease, resp idem.Response, opts TxOptions) error {
	if err := resp.CheckSize(opts.MaxResponseSize); err != nil {
		resp = idem.Response{Status: 500, Body: []byte(err.Error())}
	}
	return s.Fail(ctx, l, resp, opts.Retention)
}

// cleanup rolls tx back (when not nil) and releases l (when not nil), on a
// finishContext. It returns the Release error; a failed rollback needs no
// action (pgx closes the connection, which ends the transaction on the
// server).
func (s *Store) cleanup(ctx context.Context, opts TxOptions, tx pgx.Tx, l *idem.Lease) error {
	ctx, cancel := finishContext(ctx, opts)
	defer cancel()
	if tx != nil {
		_ = tx.Rollback(ctx)
	}
	if l != nil {
		return s.Release(ctx, l)
	}
	return nil
}

// heartbeat renews a copy of l every opts.HeartbeatInterval until the
// returned stop is called, and cancels the execution with cause
// idem.ErrLeaseLost when a renewal finds the lease gone. Other renewal errors
// are retried at the next tick; the final fenced update is what decides.
// stop waits for a renewal in flight (it is not cancelled, which would cost
// its connection) and may be called more than once.
func (s *Store) heartbeat(ctx context.Context, l idem.Lease, opts TxOptions, lost context.CancelCauseFunc) (stop func()) {
	if opts.HeartbeatInterval < 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(opts.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := s.Heartbeat(ctx, &l, opts.LeaseTTL); errors.Is(err, idem.ErrLeaseLost) {
				lost(err)
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

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

// Defaults of TxOptions.
const (
	DefaultTxLeaseTTL  = 30 * time.Second
	DefaultTxRetention = 24 * time.Hour
)

// cleanupTimeout bounds the rollback and Release that DoTx runs after a
// failure, on a context detached from the caller's (which may be why it
// failed).
const cleanupTimeout = 5 * time.Second

// TxFunc is the business function of DoTx. It runs once per claimed
// execution, with the lease in ctx (idem.LeaseFrom) and tx, the transaction
// that also records the completion. It must do its database writes on tx and
// must not commit or roll tx back. ctx is cancelled, with cause
// idem.ErrLeaseLost, when a heartbeat finds the lease taken over.
type TxFunc func(ctx context.Context, tx pgx.Tx) (idem.Response, error)

// TxOptions configures one DoTx call. The zero value is valid: every zero
// field takes the default stated on it.
type TxOptions struct {
	// LeaseTTL is the lease duration. Default 30s.
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
	// idem.DefaultMaxResponseSize, negative means unlimited. A larger response
	// is handled as fn returning an error wrapping idem.ErrResponseTooLarge.
	MaxResponseSize int
	// Permanent classifies an error of fn. When it returns ok, the error is a
	// permanent failure: resp is stored with Fail and replayed. Otherwise, and
	// when Permanent is nil, the error is retryable and the lease is released.
	Permanent func(err error) (resp idem.Response, ok bool)
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
	return o
}

// TxResult is the outcome of DoTx.
type TxResult struct {
	// Response is the response returned by fn, or the stored one.
	Response idem.Response
	// Status is idem.StatusCompleted, or idem.StatusFailed for a permanent
	// failure (executed now or replayed).
	Status idem.Status
	// Replayed is true when Response is a stored one and fn did not run.
	Replayed bool
	// Lease is the lease fn ran under; zero when Replayed.
	Lease idem.Lease
}

// DoTx runs fn at most once per key in transactional mode: the business
// writes fn makes on its pgx.Tx and the completed record commit in one
// transaction, or neither does.
//
//   - Acquire claims key. A completed or failed record with fingerprint fp is
//     replayed (Replayed true, fn not run). A record with another fingerprint
//     returns idem.ErrFingerprintMismatch; a live lease returns
//     idem.ErrInProgress, at once.
//   - Otherwise DoTx begins a transaction, runs fn(ctx with the lease, tx),
//     runs the fenced completion (CompleteTx) in the same transaction, and
//     commits. When the lease was taken over meanwhile, the fenced update
//     matches no row, the transaction rolls back (fn's writes with it) and
//     DoTx returns idem.ErrLeaseLost.
//   - An error of fn rolls back and, by TxOptions.Permanent, either stores a
//     permanent failure with Fail (the result has Status failed and fn's
//     error is returned with it) or releases the lease and returns the error.
//     A panic in fn rolls back, releases, and panics again.
//   - A COMMIT that fails after it was sent returns an ambiguous backend
//     error and keeps the lease: the transaction may have committed, so only
//     a take-over after LeaseTTL may run the request again.
//
// DoTx validates key like Acquire. It does not wait for a live lease to end;
// use WaitChange and call again.
func (s *Store) DoTx(ctx context.Context, key string, fp idem.Fingerprint, opts TxOptions, fn TxFunc) (TxResult, error) {
	opts = opts.withDefaults()
	lease, rec, err := s.Acquire(ctx, key, fp, opts.LeaseTTL)
	if err != nil {
		return TxResult{}, err
	}
	if rec != nil {
		return replay(rec, fp)
	}
	return s.runTx(ctx, lease, opts, fn)
}

// replay answers from an existing record.
func replay(rec *idem.Record, fp idem.Fingerprint) (TxResult, error) {
	switch {
	case rec.Fingerprint != fp:
		return TxResult{}, fmt.Errorf("pgstore: key %q: %w", rec.Key, idem.ErrFingerprintMismatch)
	case rec.Status == idem.StatusInProgress:
		return TxResult{}, fmt.Errorf("pgstore: key %q: %w", rec.Key, idem.ErrInProgress)
	}
	return TxResult{Response: *rec.Response, Status: rec.Status, Replayed: true}, nil
}

// runTx runs fn under l in a transaction that ends with the fenced
// completion.
func (s *Store) runTx(ctx context.Context, l *idem.Lease, opts TxOptions, fn TxFunc) (res TxResult, err error) {
	fnCtx, cancel := context.WithCancelCause(idem.WithLease(ctx, l))
	defer cancel(nil)
	stopHeartbeat := s.heartbeat(ctx, *l, opts, cancel)
	defer stopHeartbeat()

	tx, err := s.pool.BeginTx(ctx, opts.Tx)
	if err != nil {
		stopHeartbeat()
		return TxResult{}, errors.Join(backendError("begin", err, false), s.cleanup(ctx, nil, l))
	}
	defer func() {
		if p := recover(); p != nil {
			stopHeartbeat()
			_ = s.cleanup(ctx, tx, l)
			panic(p)
		}
	}()

	resp, fnErr := fn(fnCtx, tx)
	stopHeartbeat() // before the fenced update, which would make a renewal wait
	if cause := context.Cause(fnCtx); errors.Is(cause, idem.ErrLeaseLost) {
		_ = s.cleanup(ctx, tx, nil)
		return TxResult{}, errors.Join(cause, fnErr)
	}
	if fnErr == nil {
		fnErr = resp.CheckSize(opts.MaxResponseSize)
	}
	if fnErr != nil {
		if opts.Permanent != nil {
			if failResp, ok := opts.Permanent(fnErr); ok {
				_ = s.cleanup(ctx, tx, nil)
				if err := s.Fail(ctx, l, failResp, opts.Retention); err != nil {
					return TxResult{}, errors.Join(err, fnErr)
				}
				return TxResult{Response: failResp, Status: idem.StatusFailed, Lease: *l}, fnErr
			}
		}
		return TxResult{}, errors.Join(fnErr, s.cleanup(ctx, tx, l))
	}

	if err := s.CompleteTx(ctx, tx, l, resp, opts.Retention); err != nil {
		if errors.Is(err, idem.ErrLeaseLost) {
			_ = s.cleanup(ctx, tx, nil)
			return TxResult{}, err
		}
		return TxResult{}, errors.Join(err, s.cleanup(ctx, tx, l))
	}
	if err := tx.Commit(ctx); err != nil {
		if mayHaveRun(err) {
			return TxResult{}, idem.MarkAmbiguous(backendError("commit", err, false))
		}
		return TxResult{}, errors.Join(backendError("commit", err, false), s.cleanup(ctx, nil, l))
	}
	return TxResult{Response: resp, Status: idem.StatusCompleted, Lease: *l}, nil
}

// cleanup rolls tx back (when not nil) and releases l (when not nil), on a
// context detached from ctx and bounded by cleanupTimeout. It returns the
// Release error; a failed rollback needs no action (pgx closes the
// connection, which ends the transaction on the server).
func (s *Store) cleanup(ctx context.Context, tx pgx.Tx, l *idem.Lease) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
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

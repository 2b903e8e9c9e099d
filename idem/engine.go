package idem

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Func is the work guarded by an idempotency key: the request handler with
// its side effect. Its ctx carries the lease (LeaseFrom) and is cancelled,
// with cause ErrLeaseLost, when the lease is lost.
//
// On success it returns the response to store and replay. On error the
// engine's classifier decides: a permanent error stores the returned Response
// as a failure that is replayed; a retryable error releases the key.
type Func func(ctx context.Context) (Response, error)

// Result is what Do returns alongside its error.
type Result struct {
	// Response is the function's response, or the stored one on replay.
	Response Response
	// Token is the fencing token of the execution that produced Response.
	Token Token
	// Replayed is true when Response was stored by an earlier execution.
	Replayed bool
	// Failed is true when Response records a permanent failure.
	Failed bool
	// Recovered is true when the recovery hook reported that a previous,
	// crashed holder already performed the side effect, and Response is the
	// one it supplied.
	Recovered bool
	// ExpiresAt is when the stored record a replay came from is deleted,
	// by the store's clock (Record.ExpiresAt); zero when nothing was
	// replayed.
	ExpiresAt time.Time
	// Uncertain is true when the key is uncertain (the error wraps
	// ErrUncertain): this execution, or an earlier one (Replayed), may or
	// may not have performed the effect. Response is what that function
	// returned, if anything.
	Uncertain bool
}

// Engine runs functions at most once per idempotency key on a Store. It is
// safe for concurrent use; create one per store and reuse it.
type Engine struct {
	store  Store
	ops    Store  // store, or its coalescing front (WithCoalescing)
	waiter Waiter // nil when the store cannot wait
	cfg    config
	beats  heartbeats
}

// New returns an Engine on store. It panics if store is nil.
func New(store Store, opts ...Option) *Engine {
	if store == nil {
		panic("idem: New with nil Store")
	}
	e := &Engine{store: store, cfg: defaultConfig()}
	for _, o := range opts {
		o(&e.cfg)
	}
	if e.cfg.heartbeat == 0 {
		e.cfg.heartbeat = e.cfg.leaseTTL / 3
	}
	e.beats.e = e
	e.beats.kick = make(chan struct{}, 1)
	e.beats.tick = max(e.cfg.heartbeat/ticksPerBeat, time.Millisecond)
	if e.cfg.finishTime <= 0 {
		e.cfg.finishTime = e.cfg.leaseTTL
	}
	e.waiter, _ = store.(Waiter)
	e.ops = store
	if bs, ok := store.(BatchStore); ok && e.cfg.coalesce != nil {
		if c := newCoalescing(store, bs, *e.cfg.coalesce); c != nil {
			e.ops = c
		}
	}
	return e
}

// Close waits until the engine's heartbeat goroutine has exited. That
// goroutine runs only while executions run and exits on its own shortly
// after the last one; Close is for tests that check for leaked goroutines
// and for orderly shutdown. Call it after every Do has returned; the engine
// stays usable (a later Do starts the goroutine again). Close does not close
// the store.
func (e *Engine) Close() error {
	e.beats.close()
	return nil
}

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.store }

// Scope returns the engine's scope (WithScope), "" without one.
func (e *Engine) Scope() string { return e.cfg.scope }

// LeaseTTL returns the configured lease TTL.
func (e *Engine) LeaseTTL() time.Duration { return e.cfg.leaseTTL }

// Retention returns how long a finished record is kept (WithRetention).
func (e *Engine) Retention() time.Duration { return e.cfg.retention }

// Do runs fn at most once for key and the request identified by fp:
//
//   - An invalid key returns ErrInvalidKey without touching the store.
//   - A key already used by a request with another fingerprint returns
//     ErrFingerprintMismatch.
//   - A completed or failed key replays the stored response with
//     Result.Replayed (and Result.Failed for a stored failure) and a nil error.
//   - An uncertain key returns ErrUncertain with Result.Uncertain and runs
//     nothing, until an operator resolves it (Engine.Resolve).
//   - A key whose live lease another caller holds returns ErrInProgress, or,
//     with WithConflictWait, waits up to the bound and replays.
//   - Otherwise the lease is taken and fn runs, with a heartbeat renewing
//     the lease. If this was a take-over and a recovery hook is set, the hook
//     may complete the key without running fn.
//
// After fn: success stores the response with a fenced Complete; a permanent
// error stores Result.Response with Fail and is returned as is; a retryable
// error releases the key and is returned as is, unless it satisfies
// Ambiguous (fn cannot tell whether its side effect happened: see
// MarkAmbiguous): then, without a recovery hook and on a store that
// implements UncertainStore, the key is recorded uncertain and Do returns
// fn's error wrapped in ErrUncertain, with Result.Uncertain; otherwise the
// key is neither released nor stored, stays in progress until its lease
// expires, and the next attempt takes it over, so that the recovery hook
// decides (WithTakeOverUncertain records such a take-over uncertain when
// there is no hook). If fencing refuses the write
// (the lease was taken over meanwhile) Do returns ErrLeaseLost with the
// response fn produced: that result is not stored. A response above the size
// cap is returned with ErrResponseTooLarge and the key is stored as failed
// (status 500, the reason in the body) so that retries do not run fn again.
// If fn panics the key is released and the panic continues.
//
// Store errors are returned wrapped, never taken as "key is new" (fail
// closed); an error after a write may have been applied satisfies Ambiguous.
//
// The store keeps key under StorageKey(key, scope of WithScope).
func (e *Engine) Do(ctx context.Context, key string, fp Fingerprint, fn Func) (Result, error) {
	return e.DoScoped(ctx, "", key, fp, fn)
}

// DoScoped is Do for a key that belongs to scope (a tenant or an account,
// inside the engine's own WithScope). The store keeps it under
// StorageKey(key, engine scope, scope), so callers of different scopes, and
// unscoped callers, never share a record, whatever their keys hold. An empty
// scope is Do. A scope that holds ScopeSeparator is ErrInvalidKey.
func (e *Engine) DoScoped(ctx context.Context, scope, key string, fp Fingerprint, fn Func) (Result, error) {
	k, err := StorageKey(key, e.cfg.scope, scope)
	if err != nil {
		return Result{}, err
	}
	return e.doClaim(ctx, k, key, Claim{Fingerprint: fp}, fn)
}

// doClaim is DoClaim on storage key k, the caller's key.
func (e *Engine) doClaim(ctx context.Context, k, key string, c Claim, fn Func) (Result, error) {
	fp, policy := c.Fingerprint, c.Policy
	var (
		deadline time.Time
		switches int // claims again under another policy: bounded, each needs the record to change
	)
	for {
		t0 := e.now()
		lease, rec, err := e.acquire(ctx, k, fp, policy)
		tm := timing{mark: e.now()}
		tm.claim = tm.mark.Sub(t0)
		if err != nil {
			e.observeClaim(ctx, k, fp, nil, nil, err, tm)
			return Result{}, fmt.Errorf("idem: acquire %q: %w", key, err)
		}
		e.observeClaim(ctx, k, fp, lease, rec, nil, tm)
		if lease != nil {
			return e.execute(ctx, lease, fn, tm)
		}
		if rec.Fingerprint != fp {
			// The record may be this request under another policy (or,
			// after a switch, a new record under the claim's own).
			again, perr := false, error(nil)
			if rec.Fingerprint == c.Fingerprint {
				fp, policy = c.Fingerprint, c.Policy
			} else if again, perr = underStoredPolicy(key, &c, rec); perr != nil {
				return Result{}, perr
			} else if again {
				fp, policy = rec.Fingerprint, rec.FingerprintPolicy
			}
			if fp == rec.Fingerprint && rec.Status == StatusInProgress && switches < maxPolicySwitches {
				switches++
				continue // claim again: an expired lease is taken over under the record's policy
			}
		}
		if res, final, err := answer(key, fp, rec); final {
			return res, err
		}
		if e.cfg.conflictWait <= 0 {
			return Result{}, fmt.Errorf("%w: key %q", ErrInProgress, key)
		}
		now := e.cfg.clock.Now()
		if deadline.IsZero() {
			deadline = now.Add(e.cfg.conflictWait)
		}
		if !now.Before(deadline) {
			return Result{}, fmt.Errorf("%w: key %q (waited %s)", ErrInProgress, key, e.cfg.conflictWait)
		}
		if err := e.wait(ctx, k, deadline.Sub(now)); err != nil {
			return Result{}, err
		}
	}
}

// answer returns what Do returns for a key whose record rec is there:
// ErrFingerprintMismatch, or the stored response; final is false for a
// record in progress (a conflict, for the caller to wait on or report).
func answer(key string, fp Fingerprint, rec *Record) (res Result, final bool, err error) {
	if rec.Fingerprint != fp {
		return Result{}, true, fmt.Errorf("%w: key %q", ErrFingerprintMismatch, key)
	}
	switch rec.Status {
	case StatusCompleted, StatusFailed:
		return Result{Response: *rec.Response, Token: rec.Token, Replayed: true, Failed: rec.Status == StatusFailed,
			ExpiresAt: rec.ExpiresAt}, true, nil
	case StatusUncertain:
		return Result{Response: *rec.Response, Token: rec.Token, Replayed: true, Uncertain: true, ExpiresAt: rec.ExpiresAt}, true,
			fmt.Errorf("%w: key %q (token %d): resolve it before it can be answered", ErrUncertain, key, rec.Token)
	}
	return Result{}, false, nil
}

// wait blocks until the in-progress key may have changed, at most d.
func (e *Engine) wait(ctx context.Context, key string, d time.Duration) error {
	if e.waiter != nil {
		wctx, cancel := context.WithTimeout(ctx, d)
		err := e.waiter.WaitChange(wctx, key)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		return fmt.Errorf("idem: wait for %q: %w", key, err)
	}
	t := time.NewTimer(min(d, e.cfg.pollInterval))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// finishCtx is the context of the store calls that record an outcome: they
// survive the caller's cancellation, bounded by the finish timeout. A caller
// context that can never be cancelled is used as it is.
func (e *Engine) finishCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), e.cfg.finishTime)
}

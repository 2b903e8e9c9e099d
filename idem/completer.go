package idem

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of RecoverAbandoned and RunCompleter.
var (
	// ErrNoLister: the store does not implement Lister.
	ErrNoLister = errors.New("idem: store cannot list stuck keys (no idem.Lister)")
	// ErrNoRecovery: the engine has no recovery hook (WithRecovery). A
	// completer without one could only guess whether an abandoned effect
	// happened.
	ErrNoRecovery = errors.New("idem: completer needs a recovery hook (idem.WithRecovery)")
)

// AbandonedReport counts what one RecoverAbandoned pass did.
type AbandonedReport struct {
	// Found is how many stuck records the store listed.
	Found int
	// Completed: taken over, the recovery hook found the effect, and the
	// key is completed with the hook's response.
	Completed int
	// Released: taken over, the hook found no effect, and the key is
	// released so that the client's retry runs the request.
	Released int
	// Skipped: by the time of the take-over another caller (a client's
	// retry, another completer) held or had finished the key, or the
	// record was gone.
	Skipped int
	// Lost: a take-over whose Complete or Release fencing refused, because
	// yet another caller took the key over meanwhile.
	Lost int
	// Errors: store or hook failures; the key is left for the next pass.
	Errors int
}

// RecoverAbandoned is the completer (Brandur Leach's name): it finishes
// requests whose holder crashed and whose client never came back. It lists
// up to limit in-progress records whose lease expired at least olderThan
// ago (Lister), and for each one:
//
//  1. takes it over with Acquire, as a client retry would: fenced, with a
//     token higher than the crashed holder's (a record another caller holds
//     or finished meanwhile is skipped);
//  2. asks the recovery hook (WithRecovery) whether the previous holder's
//     effect happened; the hook must fence while it looks (see
//     WithRecovery), so that a holder that is only slow cannot apply its
//     effect afterwards;
//  3. if it did, completes the key with the hook's response (replayed to
//     the client if it returns); if not, releases the key so that the
//     client's eventual retry runs the request as new.
//
// Every write is fenced, so several completers and live clients can run at
// once: one of them wins each take-over and the others' writes are refused.
// A hook error leaves the lease in place; it expires and a later pass (or a
// retry) tries again. The records are scanned by the engine's scope-free
// stored keys (idem.StorageKey); the engine's own scope does not filter
// them. Transitions go to the observer like those of Do (taken_over,
// recovered, completed, released, lease_lost, backend_error).
//
// It returns ErrNoLister or ErrNoRecovery at once when a capability is
// missing, the listing error when listing fails, and otherwise the report
// with the joined errors of the keys that failed.
func (e *Engine) RecoverAbandoned(ctx context.Context, olderThan time.Duration, limit int) (AbandonedReport, error) {
	var rep AbandonedReport
	lister, ok := e.store.(Lister)
	if !ok {
		return rep, ErrNoLister
	}
	if e.cfg.recovery == nil {
		return rep, ErrNoRecovery
	}
	recs, err := lister.ListStuck(ctx, olderThan, limit)
	if err != nil {
		return rep, fmt.Errorf("idem: list stuck keys: %w", err)
	}
	rep.Found = len(recs)
	var errs []error
	for _, rec := range recs {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if err := e.completeAbandoned(ctx, rec, &rep); err != nil {
			rep.Errors++
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// completeAbandoned takes rec over and completes or releases it.
func (e *Engine) completeAbandoned(ctx context.Context, rec *Record, rep *AbandonedReport) error {
	t0 := e.now()
	lease, cur, err := e.store.Acquire(ctx, rec.Key, rec.Fingerprint, e.cfg.leaseTTL)
	tm := timing{mark: e.now()}
	tm.claim = tm.mark.Sub(t0)
	if err != nil {
		e.observeClaim(ctx, rec.Key, rec.Fingerprint, nil, nil, err, tm)
		return fmt.Errorf("idem: completer: acquire %q: %w", rec.Key, err)
	}
	if cur != nil {
		rep.Skipped++
		return nil
	}
	if lease.PrevToken == 0 {
		// The record went away (released, or its grace ran out) and this
		// claimed the absent key: give it back untouched.
		rep.Skipped++
		if err := e.store.Release(ctx, lease); err != nil && !errors.Is(err, ErrLeaseLost) {
			return fmt.Errorf("idem: completer: release fresh claim of %q: %w", rec.Key, err)
		}
		return nil
	}
	e.observeClaim(ctx, rec.Key, rec.Fingerprint, lease, nil, nil, tm)
	o := outcome{res: Result{Token: lease.Token}, tm: tm}
	done, err := e.recover(WithLease(ctx, lease), lease, &o)
	if err != nil {
		return fmt.Errorf("idem: completer: recovery of %q: %w", rec.Key, err)
	}
	if !done {
		o.kind = FinishRelease
		switch err := e.write(ctx, lease, &o); {
		case err == nil:
			rep.Released++
		case errors.Is(err, ErrLeaseLost):
			rep.Lost++
		default:
			return fmt.Errorf("idem: completer: release %q: %w", rec.Key, err)
		}
		return nil
	}
	switch _, err := e.recorded(ctx, lease, &o, e.write(ctx, lease, &o)); {
	case err == nil:
		rep.Completed++
	case errors.Is(err, ErrLeaseLost):
		rep.Lost++
	default:
		return fmt.Errorf("idem: completer: %w", err)
	}
	return nil
}

// RunCompleter runs RecoverAbandoned every interval (at most DefaultListLimit
// records a pass) until ctx ends, then returns nil. Failures of a pass are
// reported to the observer and retried by the next pass. It returns
// ErrNoLister or ErrNoRecovery at once when a capability is missing. An
// interval ≤ 0 means the lease TTL.
func (e *Engine) RunCompleter(ctx context.Context, interval, olderThan time.Duration) error {
	if _, ok := e.store.(Lister); !ok {
		return ErrNoLister
	}
	if e.cfg.recovery == nil {
		return ErrNoRecovery
	}
	if interval <= 0 {
		interval = e.cfg.leaseTTL
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _ = e.RecoverAbandoned(ctx, olderThan, DefaultListLimit)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

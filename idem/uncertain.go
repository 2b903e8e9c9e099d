package idem

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// UncertainStore is implemented by stores that can record that an
// execution's outcome is unknown (StatusUncertain) and let an operator
// settle it. The engine finds it by type assertion; without it an
// ambiguous execution stays in progress until a take-over (see Do).
type UncertainStore interface {
	// MarkUncertain stores resp as the uncertain outcome of l's execution,
	// kept for retention. It is fenced like Complete: it succeeds only if
	// the record is in progress with l.Token (expired or not), else
	// ErrLeaseLost and nothing changes. Acquire returns an uncertain record
	// unchanged, whatever its age: it is never taken over.
	MarkUncertain(ctx context.Context, l *Lease, resp Response, retention time.Duration) error
	// Resolve settles key's uncertain record, fenced by token (the record's
	// Token, as Get shows it). With applied set the effect happened: the
	// record becomes completed with *applied, kept for retention from now,
	// and is replayed from then on. With applied nil it did not: the record
	// is deleted, the fencing counter survives, and the next request runs
	// as new under a higher token. A record that is not uncertain with
	// token returns an error wrapping ErrNotUncertain, an absent one
	// ErrNotFound, a corrupt one ErrCorruptRecord; none of them changes
	// anything.
	Resolve(ctx context.Context, key string, token Token, applied *Response, retention time.Duration) error
}

// ErrNotUncertain reports that a record is not uncertain with the token a
// resolution named: it was resolved already, or the token is another
// execution's.
var ErrNotUncertain = errors.New("idem: record is not uncertain with this token")

// ErrNoUncertainStore reports a resolution asked of an engine whose store
// does not implement UncertainStore.
var ErrNoUncertainStore = errors.New("idem: store cannot record uncertain outcomes")

// WithTakeOverUncertain makes a take-over without a recovery hook record
// the key uncertain instead of running the function again: the holder
// whose lease expired may have performed the effect, and without
// WithRecovery nothing can tell. The caller gets ErrUncertain and the key
// waits for Engine.Resolve. Without this option such a take-over runs the
// function (at least once, not at most once, for effects that are not
// fenced). It needs a store that implements UncertainStore and is ignored
// otherwise.
func WithTakeOverUncertain() Option {
	return func(c *config) { c.takeOverUncertain = true }
}

// uncertainStore returns the engine's store as an UncertainStore, nil when
// it is not one.
func (e *Engine) uncertainStore() UncertainStore {
	us, _ := e.store.(UncertainStore)
	return us
}

// markUncertain sets o to record the execution as uncertain, with fn's
// response resp and cause, when the store can record it (ok).
func (e *Engine) markUncertain(o *outcome, resp Response, cause error) (ok bool) {
	if e.cfg.recovery != nil || e.uncertainStore() == nil {
		return false
	}
	if resp.CheckSize(e.cfg.maxResponse) != nil {
		resp = Response{}
	}
	o.res.Uncertain = true
	o.kind, o.resp, o.fnErr = FinishUncertain, resp, fmt.Errorf("%w: %w", ErrUncertain, cause)
	return true
}

// Resolve settles the uncertain record of key (the stored key, as an
// operator lists it: StorageKey) carrying token, as UncertainStore.Resolve
// does: applied set completes it with *applied for the engine's retention,
// nil deletes it so the request can run again. The observer is told
// (TransitionResolved; Status is StatusCompleted when applied, zero when
// not), so resolutions reach the same audit trail as executions. A store
// that cannot record uncertain outcomes returns ErrNoUncertainStore.
func (e *Engine) Resolve(ctx context.Context, key string, token Token, applied *Response) error {
	us := e.uncertainStore()
	if us == nil {
		return ErrNoUncertainStore
	}
	if applied != nil {
		if err := applied.CheckSize(e.cfg.maxResponse); err != nil {
			return fmt.Errorf("idem: resolve %q: %w", key, err)
		}
	}
	t0 := e.now()
	err := us.Resolve(ctx, key, token, applied, e.cfg.retention)
	if e.observing() {
		ev := Event{Transition: TransitionResolved, Key: key, Token: token, Op: OpResolve, Finish: e.now().Sub(t0)}
		if applied != nil {
			ev.Status = StatusCompleted
		}
		if err != nil {
			ev.Transition, ev.Err = TransitionBackendError, err
			if errors.Is(err, ErrNotUncertain) {
				ev.Transition = TransitionLeaseLost
			}
		}
		e.cfg.observer(ctx, ev)
	}
	if err != nil {
		return fmt.Errorf("idem: resolve %q: %w", key, err)
	}
	return nil
}

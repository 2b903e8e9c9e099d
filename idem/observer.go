package idem

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Transition names one step of a key's life as Engine saw it. Its String
// form is a short snake_case name fit for a metric attribute.
type Transition uint8

// The transitions an Observer is told about.
const (
	// TransitionAcquired: a lease was granted on an absent key (Token).
	TransitionAcquired Transition = iota + 1
	// TransitionTakenOver: a lease was granted over an expired one
	// (Token, PrevToken = the previous holder's token).
	TransitionTakenOver
	// TransitionReplayed: a stored completed, failed or uncertain record
	// was returned (Token = the record's token, Status = its status; an
	// uncertain one is answered with ErrUncertain).
	TransitionReplayed
	// TransitionConflict: another holder had a live lease (409, or a
	// round of a bounded wait).
	TransitionConflict
	// TransitionMismatch: the key is stored with another fingerprint (422).
	TransitionMismatch
	// TransitionHeartbeat: the lease was renewed.
	TransitionHeartbeat
	// TransitionHeartbeatRefused: a renewal was refused by fencing, or the
	// store did not answer for a whole lease TTL: the lease is lost and the
	// function's context is cancelled (Err says which).
	TransitionHeartbeatRefused
	// TransitionCompleted: Complete was accepted (Token).
	TransitionCompleted
	// TransitionFailed: Fail was accepted: a permanent failure is stored.
	TransitionFailed
	// TransitionReleased: Release was accepted after a retryable error or
	// a panic.
	TransitionReleased
	// TransitionLeaseLost: Complete, Fail or Release was refused by fencing:
	// a newer lease holds the key (Op names the write).
	TransitionLeaseLost
	// TransitionRecovered: after a take-over the recovery hook found the
	// previous holder's effect; the key is completed with its response
	// (TransitionCompleted follows when that write is accepted).
	TransitionRecovered
	// TransitionBackendError: a store call failed (Op names it, Err is the
	// error; Ambiguous(Err) tells whether it may have been applied).
	TransitionBackendError
	// TransitionUncertain: the execution's outcome is unknown and the key
	// was recorded uncertain (Token): it is never run again until resolved.
	TransitionUncertain
	// TransitionResolved: an operator settled an uncertain key
	// (Engine.Resolve; Status is StatusCompleted when the effect happened,
	// zero when it did not and the key was freed).
	TransitionResolved
	numTransitions
)

var transitionNames = [...]string{
	TransitionAcquired:         "acquired",
	TransitionTakenOver:        "taken_over",
	TransitionReplayed:         "replayed",
	TransitionConflict:         "conflict",
	TransitionMismatch:         "mismatch",
	TransitionHeartbeat:        "heartbeat",
	TransitionHeartbeatRefused: "heartbeat_refused",
	TransitionCompleted:        "completed",
	TransitionFailed:           "failed",
	TransitionReleased:         "released",
	TransitionLeaseLost:        "lease_lost",
	TransitionRecovered:        "recovered",
	TransitionBackendError:     "backend_error",
	TransitionUncertain:        "uncertain",
	TransitionResolved:         "resolved",
}

// String returns the transition's name, e.g. "taken_over", or
// "transition(N)" for a value outside the list.
func (t Transition) String() string {
	if t > 0 && t < numTransitions {
		return transitionNames[t]
	}
	return fmt.Sprintf("transition(%d)", uint8(t))
}

// Transitions returns every Transition, in declaration order.
func Transitions() []Transition {
	out := make([]Transition, 0, numTransitions-1)
	for t := TransitionAcquired; t < numTransitions; t++ {
		out = append(out, t)
	}
	return out
}

// Store operations named in Event.Op.
const (
	OpAcquire   = "acquire"
	OpHeartbeat = "heartbeat"
	OpComplete  = "complete"
	OpFail      = "fail"
	OpRelease   = "release"
	OpRecover   = "recover"
	OpUncertain = "uncertain"
	OpResolve   = "resolve"
)

// Event describes one transition. Fields that do not apply are zero.
type Event struct {
	Transition Transition
	// Key is the key as the store keeps it (StorageKey: scope included),
	// the name an operator finds it under. It can be sensitive: see
	// the audit adapters for digests.
	Key string
	// Token is the lease's fencing token, or the stored record's for
	// TransitionReplayed.
	Token Token
	// PrevToken is the superseded holder's token on TransitionTakenOver.
	PrevToken Token
	// Status is the stored record's status on TransitionReplayed,
	// TransitionConflict and TransitionMismatch.
	Status Status
	// Op is the store call a TransitionLeaseLost or TransitionBackendError
	// refers to (OpAcquire, ...).
	Op string
	// Err is the error of TransitionHeartbeatRefused, TransitionLeaseLost
	// and TransitionBackendError.
	Err error
	// Claim is how long the Acquire call of this attempt took (every
	// transition of Do's claim step and of the execution that follows it).
	Claim time.Duration
	// Func is how long the function ran (TransitionCompleted, Failed,
	// Released, LeaseLost after it ran).
	Func time.Duration
	// Finish is how long the store call that recorded the outcome took
	// (Complete, Fail, Release, Heartbeat).
	Finish time.Duration
}

// AnswersClaim reports whether ev is the engine's answer to one Acquire
// call: exactly one such event follows every claim that reached the store
// (the lease, the stored record's replay, a conflict, a mismatch, or the
// backend error of the Acquire itself), so an observer can count claims
// or measure Claim once per call, not once per later transition.
func (ev Event) AnswersClaim() bool {
	switch ev.Transition {
	case TransitionAcquired, TransitionTakenOver, TransitionReplayed,
		TransitionConflict, TransitionMismatch:
		return true
	case TransitionBackendError:
		return ev.Op == OpAcquire
	}
	return false
}

// Observer is told about every transition, synchronously, on the goroutine
// that made it (Do's, or the heartbeat's): it runs after the store call
// returned, so its position on the caller's timeline brackets the store's
// step. It must be fast, must not call the engine, and must be safe for
// concurrent use. ctx is the Do call's context (the function's context for
// heartbeat transitions), so an observer can read request-scoped values.
type Observer func(ctx context.Context, ev Event)

// WithObserver installs o; several WithObserver options all observe (in
// the order given). Without an observer a transition costs one nil check
// and no clock reading. A nil o is ignored.
func WithObserver(o Observer) Option {
	return func(c *config) {
		switch {
		case o == nil:
		case c.observer == nil:
			c.observer = o
		default:
			prev := c.observer
			c.observer = func(ctx context.Context, ev Event) { prev(ctx, ev); o(ctx, ev) }
		}
	}
}

// observing reports whether an observer is installed: callers read the clock
// only then.
func (e *Engine) observing() bool { return e.cfg.observer != nil }

// timing carries an execution's clock readings for the observer: four
// readings per Do (before and after the claim, after the function, after
// the write that records the outcome), none without an observer.
type timing struct {
	claim, fn time.Duration
	mark      mono // end of the last measured step
}

// ranFn records that the function ended at now.
func (t *timing) ranFn(now mono) {
	t.fn = now.Sub(t.mark)
	t.mark = now
}

// since returns the time since t0, or 0 when nobody observes.
func (e *Engine) since(t0 mono) time.Duration {
	if e.cfg.observer == nil {
		return 0
	}
	return e.now().Sub(t0)
}

// now returns the monotonic time when somebody observes durations, 0
// otherwise.
func (e *Engine) now() mono {
	if e.cfg.observer == nil || e.cfg.untimed {
		return 0
	}
	return mono(time.Since(epoch))
}

// WithoutDurations leaves the durations of Event zero: the engine then reads
// no clock for the observer (four monotonic clock reads per Do with them),
// for an observer that only counts transitions.
func WithoutDurations() Option {
	return func(c *config) { c.untimed = true }
}

// mono is a reading of the monotonic clock: the time since epoch. Reading
// it costs one monotonic clock read (time.Since of a monotonic Time),
// half of time.Now, which also reads the wall clock.
type mono time.Duration

// epoch is where mono readings start.
var epoch = time.Now()

// Sub returns m - o.
func (m mono) Sub(o mono) time.Duration { return time.Duration(m - o) }

// observeClaim reports the answer of an Acquire of key for fp: a grant
// (lease), a record that is there (rec: replay, mismatch or conflict), or
// err.
func (e *Engine) observeClaim(ctx context.Context, key string, fp Fingerprint, lease *Lease, rec *Record, err error, tm timing) {
	if e.cfg.observer == nil {
		return
	}
	ev := Event{Key: key, Claim: tm.claim}
	switch {
	case err != nil:
		ev.Transition, ev.Op, ev.Err = TransitionBackendError, OpAcquire, err
	case lease != nil:
		ev.Transition, ev.Token, ev.PrevToken = TransitionAcquired, lease.Token, lease.PrevToken
		if lease.PrevToken != 0 {
			ev.Transition = TransitionTakenOver
		}
	default:
		ev.Token, ev.Status = rec.Token, rec.Status
		switch {
		case rec.Fingerprint != fp:
			ev.Transition = TransitionMismatch
		case rec.Status == StatusCompleted || rec.Status == StatusFailed || rec.Status == StatusUncertain:
			ev.Transition = TransitionReplayed
		default:
			ev.Transition = TransitionConflict
		}
	}
	e.cfg.observer(ctx, ev)
}

// observeWrite reports the outcome of a fenced write (op) of lease l that
// began at tm.mark: accepted as ok, refused by fencing, or failed.
func (e *Engine) observeWrite(ctx context.Context, ok Transition, op string, l *Lease, err error, tm timing) {
	if e.cfg.observer == nil {
		return
	}
	ev := Event{Key: l.Key, Token: l.Token, Claim: tm.claim, Func: tm.fn}
	if !e.cfg.untimed {
		ev.Finish = e.now().Sub(tm.mark)
	}
	switch {
	case err == nil:
		ev.Transition = ok
	case errors.Is(err, ErrLeaseLost):
		ev.Transition, ev.Op, ev.Err = TransitionLeaseLost, op, err
	default:
		ev.Transition, ev.Op, ev.Err = TransitionBackendError, op, err
	}
	e.cfg.observer(ctx, ev)
}

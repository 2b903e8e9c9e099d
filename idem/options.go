package idem

import (
	"context"
	"errors"
	"time"
)

// Defaults used when an option is not given.
const (
	DefaultLeaseTTL     = 30 * time.Second
	DefaultRetention    = 24 * time.Hour
	DefaultPollInterval = 20 * time.Millisecond
)

// Option configures an Engine.
type Option func(*config)

type config struct {
	leaseTTL     time.Duration
	heartbeat    time.Duration // <0: off; 0: leaseTTL/3
	retention    time.Duration
	conflictWait time.Duration
	pollInterval time.Duration
	finishTime   time.Duration
	maxResponse  int
	scope        string
	permanent    func(error) bool
	recovery     RecoverFunc
	hook         Hook
	observer     Observer
	untimed      bool // WithoutDurations
	coalesce     *CoalesceOptions
	clock        Clock

	takeOverUncertain bool // WithTakeOverUncertain
}

func defaultConfig() config {
	return config{
		leaseTTL:     DefaultLeaseTTL,
		retention:    DefaultRetention,
		pollInterval: DefaultPollInterval,
		permanent:    IsPermanent,
		clock:        SystemClock{},
		coalesce:     &CoalesceOptions{MaxBatch: defaultMaxBatch},
	}
}

// WithLeaseTTL sets how long a lease lives without a heartbeat (default 30s).
// Values ≤ 0 keep the default.
func WithLeaseTTL(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.leaseTTL = d
		}
	}
}

// WithHeartbeat sets how often the lease is renewed while the function runs.
// Zero means a third of the lease TTL (the default); a negative interval turns
// the heartbeat off, so a function longer than the lease can be taken over.
func WithHeartbeat(interval time.Duration) Option {
	return func(c *config) { c.heartbeat = interval }
}

// WithRetention sets how long completed and failed records are kept and
// replayed (default 24h). Values ≤ 0 keep the default.
func WithRetention(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.retention = d
		}
	}
}

// WithConflictWait makes Do wait up to d for a concurrent execution of the
// same key to finish and then replay its response, instead of returning
// ErrInProgress at once (d = 0, the default). The wait uses the store's
// Waiter when it has one, else polls every poll interval (0 keeps
// DefaultPollInterval).
func WithConflictWait(d, poll time.Duration) Option {
	return func(c *config) {
		c.conflictWait = d
		if poll > 0 {
			c.pollInterval = poll
		}
	}
}

// WithFinishTimeout bounds the store calls that record the outcome after the
// function returned (Complete, Fail, Release). They run even when the
// caller's context was cancelled meanwhile, since the side effect may already
// have happened. Zero means the lease TTL.
func WithFinishTimeout(d time.Duration) Option {
	return func(c *config) { c.finishTime = d }
}

// WithMaxResponseSize caps the stored response (default
// DefaultMaxResponseSize; negative means unlimited). See Engine.Do for what
// happens above the cap.
func WithMaxResponseSize(n int) Option {
	return func(c *config) { c.maxResponse = n }
}

// WithScope puts every key of the engine in scope (see StorageKey), so
// tenants that share one store cannot collide, and keys of an unscoped
// engine on the same store cannot reach them.
func WithScope(scope string) Option {
	return func(c *config) { c.scope = scope }
}

// WithClassifier decides which function errors are permanent (stored with
// Fail and replayed) and which are retryable (the key is released). The
// default is IsPermanent. A nil f keeps the default.
func WithClassifier(permanent func(error) bool) Option {
	return func(c *config) {
		if permanent != nil {
			c.permanent = permanent
		}
	}
}

// RecoverFunc is asked, when Do takes over the expired lease of a previous
// holder, whether that holder's side effect already happened. It returns the
// response to complete with and done = true if so; done = false runs the
// function again. An error leaves the lease in place (it is not released, so
// the next take-over asks again) and is returned by Do.
type RecoverFunc func(ctx context.Context, l Lease) (resp Response, done bool, err error)

// WithRecovery installs the recovery hook. Together with a side-effect sink
// that can answer "did key K's effect already happen?", it closes the window
// between a side effect and its completion: a holder that crashed there is
// not executed twice.
//
// The hook must fence before or while it looks: in the same step as the
// lookup, make the sink reject effects carrying a token lower than l.Token.
// A previous holder that is only slow (paused, partitioned) rather than dead
// may otherwise apply its effect just after the lookup found nothing, and
// the function then applies it again under l.Token. With pgstore, call
// ApplyFenced with l.Token in the transaction that reads the effect.
func WithRecovery(f RecoverFunc) Option {
	return func(c *config) { c.recovery = f }
}

// WithClock sets the clock the engine uses for its own timing (lease
// deadlines when the store is unreachable, conflict waits).
func WithClock(clock Clock) Option {
	return func(c *config) {
		if clock != nil {
			c.clock = clock
		}
	}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as a permanent failure for the default classifier: Do
// stores it with Fail and replays the failure to later requests. A nil err
// stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

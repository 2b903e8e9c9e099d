package idem

import (
	"context"
	"time"
)

// Store is the storage contract of the engine. Every method is one atomic
// step on the backend; every write after Acquire is fenced by the lease's
// token. Implementations must be safe for concurrent use and must pass
// backends/storetest.
//
// Errors: ErrLeaseLost when fencing refuses a write, ErrNotFound from Get,
// ErrCorruptRecord for undecodable records, ErrBackend (via BackendError) for
// backend failures, and MarkAmbiguous around a failure that happened after a
// write may have reached the backend. A cancelled ctx returns ctx.Err()
// (possibly wrapped, possibly ambiguous).
//
// Optional interfaces. The engine and the tools find a store's optional
// capabilities (BatchStore, Waiter, Sweeper, Lister, PrefixLister,
// Statter, CorruptLister, …) by a type assertion on the value they are
// given. A wrapper that embeds a concrete store keeps every method of it,
// the optional ones included: a struct embedding *pgstore.Store that
// overrides Release is still a BatchStore through the embedded
// FinishBatch, and Engine.DoBatch releases through that, never through the
// wrapper's Release. When a wrapper changes a transition, override every
// method that makes it (Release and FinishBatch), or embed the Store
// interface rather than the concrete type (struct{ idem.Store }), which
// exposes the required methods alone and hides the optional ones.
// backends/storetest's BatchPathAgreesWithSinglePath fails a store whose
// batch and single paths disagree.
type Store interface {
	// Acquire claims key for the request fp, or reports what is there.
	// Exactly one of lease and rec is non-nil when err is nil.
	//   - absent: a new record in progress; lease with a fresh token.
	//   - in progress, lease expired, same fingerprint: take-over; lease
	//     with a higher token and PrevToken set to the previous token.
	//   - anything else (live lease, completed, failed, or a fingerprint
	//     that differs): the record, unchanged.
	Acquire(ctx context.Context, key string, fp Fingerprint, leaseTTL time.Duration) (*Lease, *Record, error)
	// Heartbeat extends l to now+leaseTTL and updates l.Expiry. It returns
	// ErrLeaseLost if the record is not in progress with l.Token. A lease
	// that expired but was not taken over still carries l.Token and is
	// renewed: fencing is by token, expiry only permits a take-over.
	Heartbeat(ctx context.Context, l *Lease, leaseTTL time.Duration) error
	// Complete stores resp as the completed response, kept for retention.
	// Like every fenced write it succeeds only if the record is in progress
	// with l.Token (expired or not), else ErrLeaseLost and nothing changes.
	Complete(ctx context.Context, l *Lease, resp Response, retention time.Duration) error
	// Fail stores resp as a permanent failure, kept for retention and
	// replayed like a completion.
	Fail(ctx context.Context, l *Lease, resp Response, retention time.Duration) error
	// Release deletes the in-progress record so the request can be retried.
	// The fencing counter survives: the next lease gets a higher token.
	Release(ctx context.Context, l *Lease) error
	// Get returns the record of key, or ErrNotFound.
	Get(ctx context.Context, key string) (*Record, error)
}

// Sweeper is implemented by stores that delete expired records on request.
// Sweep removes records past ExpiresAt and returns how many it removed.
type Sweeper interface {
	Sweep(ctx context.Context) (removed int, err error)
}

// Waiter is implemented by stores that can block until an in-progress record
// changes (completed, failed, released, or lease expired) without polling the
// caller's way. WaitChange returns nil when it is worth calling Acquire again,
// or ctx.Err() when ctx ends first. Spurious early returns are allowed.
type Waiter interface {
	WaitChange(ctx context.Context, key string) error
}

// Clock tells the time. Stores and the engine take one so tests can control
// time; SystemClock is the default.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock (with Go's monotonic reading).
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

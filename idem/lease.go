package idem

import (
	"context"
	"time"
)

// Lease is the right to execute the request for one key, held by one caller
// and identified by its fencing token. Every write a holder makes after
// Acquire is fenced: it succeeds only if the record still carries Token.
type Lease struct {
	Key         string
	Token       Token
	Fingerprint Fingerprint
	// FingerprintPolicy is the id of the policy Fingerprint was computed
	// under, as the record keeps it (Record.FingerprintPolicy).
	FingerprintPolicy string
	// PrevToken is the token of the previous holder when this lease took over
	// an expired one (that holder crashed or stalled), zero otherwise. A
	// non-zero PrevToken means the previous execution may have run its side
	// effect: see WithRecovery.
	PrevToken Token
	// Expiry is when the lease ends by the backend's clock, as last reported
	// by Acquire or Heartbeat.
	Expiry time.Time
}

// TakeOver reports whether l replaced an expired lease of another holder.
func (l *Lease) TakeOver() bool { return l.PrevToken != 0 }

type leaseKey struct{}

// LeaseFrom returns the lease of the execution running with ctx, as set by
// Engine.Do for its function. ok is false outside such an execution. Side
// effect sinks use the token to reject stale writers.
func LeaseFrom(ctx context.Context) (l Lease, ok bool) {
	p, ok := ctx.Value(leaseKey{}).(*Lease)
	if !ok || p == nil {
		return Lease{}, false
	}
	return *p, true
}

// WithLease returns a context that carries l for LeaseFrom. Engine.Do does
// this itself; WithLease is for stores and adapters that run functions under a
// lease outside Do.
func WithLease(ctx context.Context, l *Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

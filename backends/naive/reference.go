package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// Reference is a small correct in-memory idem.Store (and idem.Sweeper):
// the map store every design of this package is built on, exported as a
// base for experiments and teaching. One mutex, one map, one fencing
// counter for every key; Acquire is one atomic step, every write is fenced
// by the lease's token, responses are replayed byte for byte, records
// expire after their retention (lazily, or by Sweep). It passes
// backends/storetest and starts no goroutine.
//
// Build a variant by embedding it and replacing a method, as the
// Example does; a method you do not replace is Reference's. Reference
// implements no optional interface but idem.Sweeper and idem.PolicyStore
// (it keeps the fingerprint policy id with a record; no idem.Lister, no
// idem.BatchStore, no idem.Waiter), so a wrapper's overrides are the only
// path the engine takes (see idem.Store on optional interfaces), except
// that a claim naming a fingerprint policy (Engine.DoClaim) goes through
// AcquirePolicy: a variant that replaces Acquire replaces AcquirePolicy
// too, or embeds idem.Store to hide it. It is
// not a production store: memory only, one lock, nothing kept across
// restarts; backends/memstore is the reference engine's memory store.
type Reference struct {
	mapStore
}

// NewReference returns an empty Reference store configured by opts
// (Clock, TakeoverGrace; the other fields are for the broken designs and
// ignored).
func NewReference(opts Options) *Reference {
	return newDesign[Reference](opts)
}

var (
	_ design           = (*Reference)(nil)
	_ idem.PolicyStore = (*Reference)(nil)
)

// Acquire implements idem.Store: AcquirePolicy without a policy id (a
// take-over keeps the record's).
func (s *Reference) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquirePolicy(ctx, key, fp, "", leaseTTL)
}

// AcquirePolicy implements idem.PolicyStore: Acquire that keeps policy
// with the record it creates.
func (s *Reference) AcquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquirePolicy(ctx, key, fp, policy, leaseTTL)
}

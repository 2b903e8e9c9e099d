package naive

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/idem"
)

// DefaultFailEvery is how often a FailOpen store's Acquire meets an injected
// backend error when Options.FailEvery is zero: once every 16 calls.
const DefaultFailEvery = 16

// FailOpen is the "fail open on a store error" design: when the backend
// cannot answer an Acquire (a timeout, a dropped connection, a failover),
// the store does not return the error but answers as if the key were new
// ("cache miss, go ahead"), with a lease it could not record. The caller
// runs the side effect while another execution may hold the key, or has
// already finished it; and since its lease was never written, its
// completion is refused, so its retry runs the effect once more. Double
// execution (I1) even with a fenced sink and recovery: the unrecorded lease
// is not a take-over, so no recovery lookup runs, and its token is newer
// than the holder's. Found by the duplicates scenario. The idempotency
// literature's rule is the opposite: "never assume new" on a store error.
//
// The backend errors are injected: every Options.FailEvery-th Acquire of the
// store meets one. Every other call, and everything else, is sound.
type FailOpen struct {
	mapStore
	every int64
	calls atomic.Int64
}

// NewFailOpen returns a FailOpen store. Options.FailEvery sets how often
// its backend fails (see Options).
func NewFailOpen(opts Options) *FailOpen {
	every := int64(opts.FailEvery)
	if every == 0 {
		every = DefaultFailEvery
	}
	s := &FailOpen{every: every}
	s.init(opts)
	return s
}

// Acquire is mapStore's, except on a call that meets a backend error: then
// it returns a fresh lease (next token, no previous token) and writes
// nothing. That is the flaw.
func (s *FailOpen) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if n := s.calls.Add(1); s.every <= 0 || n%s.every != 0 {
		return s.mapStore.Acquire(ctx, key, fp, leaseTTL)
	}
	// The backend did not answer. Assume the key is new.
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newLease(key, fp, leaseTTL, s.clock.Now(), 0), nil, nil
}

package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// NoHeartbeat is the "short lease, no heartbeat" design: the lease lasts the
// TTL given at Acquire and cannot be renewed. Heartbeat returns nil without
// extending anything (the engine believes the lease was renewed). An
// execution that is slow but healthy outlives its lease and is taken over
// while it still runs: its side effect and its successor's both happen (I1).
// The slow holder's Complete is then fenced off, too late. Found by the
// slow-handler scenario.
//
// Take-over, fencing of Complete, Fail and Release, tokens, replay and
// fingerprints are sound.
type NoHeartbeat struct {
	mapStore
}

// NewNoHeartbeat returns a NoHeartbeat store.
func NewNoHeartbeat(opts Options) *NoHeartbeat {
	return newDesign[NoHeartbeat](opts)
}

// Heartbeat does nothing: it neither extends the lease nor checks that l
// still holds it, and leaves l.Expiry as it was. It returns ctx.Err() if ctx
// is done, else nil. That is the flaw.
func (s *NoHeartbeat) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	return ctx.Err()
}

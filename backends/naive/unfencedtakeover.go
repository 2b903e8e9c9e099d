package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// UnfencedTakeover is the "unfenced take-over" design: an expired lease is
// taken over correctly, with a higher token, but Complete and Fail do not
// check the token: they overwrite the key's record whatever it holds ("SET
// key …" or "UPDATE … WHERE key = $1", with no token in the condition), so
// the last writer wins. A holder that stalled past its lease (a GC pause)
// and wakes up after its successor took over still completes: its side
// effect ran as well as the successor's (I1), its response replaces the
// successor's (I3), and a completion with a lower token is accepted after a
// higher one (I5). Found by the gc-pause scenario.
//
// Heartbeat and Release stay fenced; everything else is sound.
type UnfencedTakeover struct {
	mapStore
}

// NewUnfencedTakeover returns an UnfencedTakeover store.
func NewUnfencedTakeover(opts Options) *UnfencedTakeover {
	return newDesign[UnfencedTakeover](opts)
}

// Complete stores resp under l's token whatever the key holds. That is the
// flaw.
func (s *UnfencedTakeover) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusCompleted, resp, retention, nil)
}

// Fail stores resp as a failure under l's token whatever the key holds.
// That is the flaw.
func (s *UnfencedTakeover) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusFailed, resp, retention, nil)
}

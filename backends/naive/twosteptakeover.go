package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// TwoStepTakeover is the take-over a store author writes with a read and a
// plain write: it reads the record, sees the lease expired, and in a second
// step writes a new in-progress record with the next token, drawn at the
// write ("GET …; SET key {token: INCR(counter)}" with no condition on what
// was read). Unlike RacyTakeover the token is drawn when the record is
// written, so the record always holds the highest token and the last
// writer is the one holder that can still complete: every fenced write
// other than the take-over itself behaves. Callers that read the same
// expired lease all take it over, all report the same previous token, and
// all start their execution.
//
// With a plain sink both effects apply (I1). With a fenced sink and
// recovery the sink absorbs the double effect, and the two take-overs
// overlap in time, so token order over real time (I7's first rules) sees
// nothing: only the rule "at most one take-over per previous token per
// key" (I7) catches it. Found by the takeover-race scenario.
type TwoStepTakeover struct {
	mapStore
}

// NewTwoStepTakeover returns a TwoStepTakeover store. Options.Window sets
// the gap between the read and the write of a take-over (see Options).
func NewTwoStepTakeover(opts Options) *TwoStepTakeover {
	return newDesign[TwoStepTakeover](opts)
}

// Acquire claims an absent key at once. On an expired lease it lets go of
// the lock, waits out the window and writes a new lease over whatever the
// record holds by then, reporting the token it read as the previous one.
// That is the flaw.
func (s *TwoStepTakeover) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	read := func(time.Time, idem.Token) {}
	write := func(now time.Time, prev idem.Token) *idem.Lease { return s.claim(key, fp, leaseTTL, now, prev) }
	return s.takeOverInTwoSteps(ctx, key, fp, read, write)
}

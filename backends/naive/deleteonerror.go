package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// DeleteOnError is the "delete on error without owner check" design: when the
// request fails with a retryable error, Release deletes the key ("DEL key",
// "DELETE … WHERE key = $1") without checking that the record still carries
// the caller's token. A holder that stalled past its lease, was taken over,
// and then fails deletes its successor's lease, so a third request finds the
// key free and runs while the successor is still running: double execution
// (I1). Found by the pause-then-fail scenario.
//
// Heartbeat, Complete and Fail stay fenced; everything else is sound.
type DeleteOnError struct {
	mapStore
}

// NewDeleteOnError returns a DeleteOnError store.
func NewDeleteOnError(opts Options) *DeleteOnError {
	return newDesign[DeleteOnError](opts)
}

// Release deletes whatever record the key has, whoever owns it, and returns
// nil. That is the flaw.
func (s *DeleteOnError) Release(ctx context.Context, l *idem.Lease) error {
	return s.locked(ctx, func(time.Time) error {
		delete(s.records, l.Key)
		return nil
	})
}

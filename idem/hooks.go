package idem

import (
	"context"
	"fmt"
)

// Point names a place in Engine.Do where a fault hook runs.
type Point uint8

// The fault points, in the order an execution passes them.
const (
	// PointAfterAcquire: the lease is held, recovery and the function have
	// not run.
	PointAfterAcquire Point = iota + 1
	// PointBeforeFn: right before the function (its side effect) runs. No
	// heartbeat runs yet, so a stall here is a holder paused past its lease.
	PointBeforeFn
	// PointAfterFn: the function returned (its side effect happened), the
	// outcome is not recorded. The heartbeat has stopped.
	PointAfterFn
	// PointAfterComplete: the outcome is recorded; the reply has not reached
	// the caller.
	PointAfterComplete
)

// String returns the point's name, e.g. "after-fn".
func (p Point) String() string {
	switch p {
	case PointAfterAcquire:
		return "after-acquire"
	case PointBeforeFn:
		return "before-fn"
	case PointAfterFn:
		return "after-fn"
	case PointAfterComplete:
		return "after-complete"
	}
	return fmt.Sprintf("point(%d)", uint8(p))
}

// Hook is called at every fault point of every execution. A hook that blocks
// stalls the holder (its heartbeat is not running at any point). A hook that
// returns an error simulates a crash there: Do returns at once with an error
// wrapping ErrAborted and the hook's error, without any further store call,
// so the lease stays until it expires, as a crashed process would leave it.
// Hooks must be safe for concurrent use.
type Hook func(ctx context.Context, p Point, l Lease) error

// WithHook installs a fault hook. Without one the points cost a nil check.
func WithHook(h Hook) Option {
	return func(c *config) { c.hook = h }
}

func (e *Engine) at(ctx context.Context, p Point, l *Lease) error {
	if e.cfg.hook == nil {
		return nil
	}
	if err := e.cfg.hook(ctx, p, *l); err != nil {
		return fmt.Errorf("%w at %s: %w", ErrAborted, p, err)
	}
	return nil
}

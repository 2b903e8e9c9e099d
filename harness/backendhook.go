package harness

import (
	"context"

	"github.com/idembench/idembench/chaos/backendfault"
	"github.com/idembench/idembench/idem"
)

// Hook returns the engine fault hook of the run: the scenario's, then the
// backend faults' (an aimed failover), either of which may be nil.
func (f *withBackend) Hook() idem.Hook {
	h := f.Injector.Hook()
	bh, ok := f.env.Faults.(backendfault.Hooker)
	if !ok {
		return h
	}
	b := bh.Hook()
	switch {
	case b == nil:
		return h
	case h == nil:
		return b
	}
	return func(ctx context.Context, p idem.Point, l idem.Lease) error {
		if err := h(ctx, p, l); err != nil {
			return err
		}
		return b(ctx, p, l)
	}
}

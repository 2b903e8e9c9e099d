package naive

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idembench/idembench/idem"
)

// ErrUnknownDesign reports a design name that New does not know.
var ErrUnknownDesign = errors.New("naive: unknown design")

// design is what every design is. The registry's constructors return it, so
// the table below is the compile-time check that each design implements both.
type design interface {
	idem.Store
	idem.Sweeper
}

// designs is the registry: the six designs of docs/design/verification.md in its order,
// then the second wave's.
var designs = []struct {
	name string
	new  func(Options) design
}{
	{"check-then-act", func(o Options) design { return NewCheckThenAct(o) }},
	{"cache-on-success", func(o Options) design { return NewCacheOnSuccess(o) }},
	{"unfenced-takeover", func(o Options) design { return NewUnfencedTakeover(o) }},
	{"delete-on-error", func(o Options) design { return NewDeleteOnError(o) }},
	{"no-expiry", func(o Options) design { return NewNoExpiry(o) }},
	{"no-heartbeat", func(o Options) design { return NewNoHeartbeat(o) }},
	{"token-restart", func(o Options) design { return NewTokenRestart(o) }},
	{"racy-takeover", func(o Options) design { return NewRacyTakeover(o) }},
	{"unfenced-heartbeat", func(o Options) design { return NewUnfencedHeartbeat(o) }},
	{"fail-open", func(o Options) design { return NewFailOpen(o) }},
	{"keeps-pending", func(o Options) design { return NewKeepsPending(o) }},
	{"unscoped-key", func(o Options) design { return NewUnscopedKey(o) }},
	{"two-step-takeover", func(o Options) design { return NewTwoStepTakeover(o) }},
	{"fail-on-expiry", func(o Options) design { return NewFailOnExpiry(o) }},
	{"retries-uncertain", func(o Options) design { return NewRetriesUncertain(o) }},
	{"touch-on-read", func(o Options) design { return NewTouchOnRead(o) }},
	{"lean-record", func(o Options) design { return NewLeanRecord(o) }},
	{"skewed-leases", func(o Options) design { return NewSkewedLeases(o) }},
}

// Names returns the names of the designs New accepts, in a fixed order:
// check-then-act, cache-on-success, unfenced-takeover, delete-on-error,
// no-expiry, no-heartbeat, token-restart, racy-takeover, unfenced-heartbeat,
// fail-open, keeps-pending, unscoped-key, two-step-takeover,
// fail-on-expiry, retries-uncertain, touch-on-read, lean-record,
// skewed-leases. The slice is the caller's.
func Names() []string {
	names := make([]string, len(designs))
	for i, d := range designs {
		names[i] = d.name
	}
	return names
}

// New returns a fresh store of the named design on clock (nil means the
// system clock), with the other Options at their defaults. An unknown name
// returns an error wrapping ErrUnknownDesign that lists the valid names.
func New(name string, clock idem.Clock) (idem.Store, error) {
	for _, d := range designs {
		if d.name == name {
			return d.new(Options{Clock: clock}), nil
		}
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownDesign, name, strings.Join(Names(), ", "))
}

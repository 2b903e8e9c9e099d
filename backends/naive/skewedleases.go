package naive

import (
	"context"
	"time"

	"github.com/idembench/idembench/idem"
)

// SkewedLeases is the "lease expiry judged by the app server's clock"
// design: the records live in one shared store, but each app server's
// client decides whether a lease has expired, and when a new or renewed
// lease ends, by its own clock, as a client library on a plain key-value
// store does. App servers whose clocks are a few hundred milliseconds
// apart then disagree: a server whose clock runs ahead takes over a lease
// that a server whose clock runs behind granted, while that lease is still
// live in true time. If the holder is only slow, both execute.
//
// NewSkewedLeases returns the shared store, judged by Options.Clock;
// WithClock returns the view of one app server, judged by that server's
// clock. Retention, fencing, tokens, replay and fingerprints are sound;
// with a single clock the design is correct (it passes backends/storetest,
// which runs one clock). Found by the clock-skew fault and T1, in the
// simulation (package sim) and in run (duplicates --clock-skew 1s: the
// copies of a request reach app servers whose clocks are apart by more
// than a lease TTL). It implements workload.ClockView and sim.ClockView.
type SkewedLeases struct {
	*mapStore
	app idem.Clock // the app server's clock
}

// NewSkewedLeases returns a SkewedLeases store whose own view judges time
// by Options.Clock.
func NewSkewedLeases(opts Options) *SkewedLeases {
	s := &SkewedLeases{mapStore: &mapStore{}}
	s.init(opts)
	s.app = s.clock
	return s
}

// WithClock returns a view of the same records whose leases are judged by
// clock: the store as an app server with that clock sees it.
func (s *SkewedLeases) WithClock(clock idem.Clock) idem.Store {
	if clock == nil {
		clock = idem.SystemClock{}
	}
	return &SkewedLeases{mapStore: s.mapStore, app: clock}
}

// Acquire takes over a lease that has expired by the app server's clock,
// and sets the new lease's expiry by it. That is the flaw.
func (s *SkewedLeases) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, _ time.Time) (*idem.Lease, *idem.Record) {
		now := s.app.Now()
		ok, prev := mayTakeOver(r, fp, now)
		if !ok {
			return nil, copyOf(r)
		}
		return s.claim(key, fp, leaseTTL, now, prev), nil
	})
}

// Heartbeat is fenced and extends the lease to the app server's clock
// plus leaseTTL.
func (s *SkewedLeases) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	return s.locked(ctx, func(now time.Time) error {
		r, err := s.owned(l, now)
		if err != nil {
			return err
		}
		s.extend(l, r, s.app.Now().Add(leaseTTL))
		return nil
	})
}

package naive

import (
	"context"
	"runtime"
	"time"

	"github.com/idembench/idembench/idem"
)

// DefaultWindow is CheckThenAct's pause between its read and its write when
// Options.Window is zero: about one network round trip.
const DefaultWindow = time.Millisecond

// CheckThenAct is the "check, then act" design: Acquire looks the key up,
// and if it is free writes an in-progress record in a second, separate step
// ("SELECT, then INSERT"; "GET, then SET" without NX). The two steps are not
// one atomic transition, so concurrent duplicates that all read "absent"
// before any of them writes all get a lease and all run: double execution
// (I1), found by the duplicates scenario. The last writer's record stays, so
// every other holder later loses its Complete to fencing, after its side
// effect already happened.
//
// Everything else is sound: global fencing tokens, fenced writes, replay,
// fingerprints, retention. It has no data race: each step holds the lock;
// only the transition as a whole is not atomic.
type CheckThenAct struct {
	mapStore
}

// NewCheckThenAct returns a CheckThenAct store. Options.Window sets the gap
// between the read and the write (see Options).
func NewCheckThenAct(opts Options) *CheckThenAct {
	return newDesign[CheckThenAct](opts)
}

// Acquire reads the key under the lock, lets go of the lock, waits out the
// window and then writes a new in-progress record without looking again,
// overwriting whatever another caller wrote meanwhile. That is the flaw.
func (s *CheckThenAct) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// Check.
	s.mu.Lock()
	now := s.clock.Now()
	r, err := s.live(key, now)
	var rec *idem.Record
	if r != nil {
		rec = copyOf(r)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	ok, prev := mayTakeOver(rec, fp, now)
	if !ok {
		return nil, rec, nil
	}

	gap(s.window)

	// Act, on what was read.
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claim(key, fp, leaseTTL, s.clock.Now(), prev), nil, nil
}

// takeOverInTwoSteps is the Acquire of the designs that take over an
// expired lease in two steps: an absent key is claimed at once, and a key
// held or finished is answered with its record, as a sound store does. On
// an expired lease with the same fingerprint it calls read under the lock
// with the token it replaces, lets go of the lock, waits out s.window, and
// under the lock again lets write issue the lease without looking at the
// record again. That gap is the flaw of the designs that use it.
func (s *mapStore) takeOverInTwoSteps(ctx context.Context, key string, fp idem.Fingerprint,
	read func(now time.Time, prev idem.Token), write func(now time.Time, prev idem.Token) *idem.Lease) (*idem.Lease, *idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	now := s.clock.Now()
	r, err := s.live(key, now)
	if err != nil {
		s.mu.Unlock()
		return nil, nil, err
	}
	ok, prev := mayTakeOver(r, fp, now)
	switch {
	case !ok:
		rec := copyOf(r)
		s.mu.Unlock()
		return nil, rec, nil
	case r == nil:
		defer s.mu.Unlock()
		return write(now, 0), nil, nil
	}
	read(now, prev)
	s.mu.Unlock()

	gap(s.window)

	s.mu.Lock()
	defer s.mu.Unlock()
	return write(s.clock.Now(), prev), nil, nil
}

// windowOf is the read-to-write gap opts asks for (see Options.Window).
func windowOf(opts Options) time.Duration {
	if opts.Window == 0 {
		return DefaultWindow
	}
	return opts.Window
}

// gap waits out the window between the two steps of a non-atomic
// transition: sleeps for w, or only yields the processor when w < 0.
func gap(w time.Duration) {
	if w > 0 {
		time.Sleep(w)
		return
	}
	runtime.Gosched()
}

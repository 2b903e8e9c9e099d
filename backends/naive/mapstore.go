package naive

import (
	"context"
	"sync"
	"time"

	"github.com/idembench/idembench/idem"
)

// Options configures every design. The zero value is usable.
type Options struct {
	// Clock tells the time for leases and retention. Nil means the system
	// clock.
	Clock idem.Clock
	// TakeoverGrace is how long an in-progress record whose lease expired is
	// kept, so that a take-over is recognised (Lease.PrevToken). Zero means
	// 24 hours. NoExpiry ignores it: its in-progress records are never
	// removed.
	TakeoverGrace time.Duration
	// Window is how long CheckThenAct and RacyTakeover pause between their
	// read and their write, standing for the network round trip that
	// separates them in a real deployment. Zero means DefaultWindow; a
	// negative Window only yields the processor (runtime.Gosched). The other
	// designs ignore it.
	Window time.Duration
	// FailEvery makes every FailEvery-th Acquire of a FailOpen store meet an
	// injected backend error (the first Acquire is call 1). Zero means
	// DefaultFailEvery; a negative value injects no error. The other designs
	// ignore it.
	FailEvery int
}

// mapStore is a correct in-memory idem.Store: one mutex, one map, one global
// fencing counter. Every design embeds it and replaces the one transition it
// gets wrong, so that everything else (tokens, replay, fingerprints,
// retention) behaves like a sound store and the harness catches exactly the
// flaw. It starts no goroutine; expired records go lazily on access or by
// Sweep.
type mapStore struct {
	mu      sync.Mutex
	records map[string]*idem.Record // replaced, never mutated, once stored
	tokens  idem.Token              // last token issued, for every key
	clock   idem.Clock
	grace   time.Duration // < 0: in-progress records are kept forever
	window  time.Duration // the read-to-write gap of the designs that take two steps (see Options.Window)
}

// init makes s an empty store configured by opts.
func (s *mapStore) init(opts Options) {
	s.records = make(map[string]*idem.Record)
	s.clock = opts.Clock
	if s.clock == nil {
		s.clock = idem.SystemClock{}
	}
	s.grace = opts.TakeoverGrace
	if s.grace == 0 {
		s.grace = 24 * time.Hour
	}
	s.window = windowOf(opts)
}

// newDesign returns a new design T, which embeds mapStore, empty and
// configured by opts.
func newDesign[T any, P interface {
	*T
	init(Options)
}](opts Options) P {
	s := P(new(T))
	s.init(opts)
	return s
}

// live returns the stored record of key, validated, or nil if there is none
// or it is past its expiry (then it is removed). The lock must be held.
func (s *mapStore) live(key string, now time.Time) (*idem.Record, error) {
	r := s.records[key]
	if r == nil {
		return nil, nil
	}
	if !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
		delete(s.records, key)
		return nil, nil
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// found is live for a key that must have a record: none is ErrNotFound.
// The lock must be held.
func (s *mapStore) found(key string, now time.Time) (*idem.Record, error) {
	r, err := s.live(key, now)
	if err == nil && r == nil {
		err = idem.ErrNotFound
	}
	return r, err
}

// copyOf returns a copy of r for a caller, who may keep or change it.
func copyOf(r *idem.Record) *idem.Record {
	c := *r
	return &c
}

// keepUntil is when an in-progress record whose lease ends at leaseExp is
// removed; zero means never.
func (s *mapStore) keepUntil(leaseExp time.Time) time.Time {
	if s.grace < 0 {
		return time.Time{}
	}
	return leaseExp.Add(s.grace)
}

// mayTakeOver reports whether a request with fp may claim a key whose live
// record is r (nil: absent), and the token it replaces.
func mayTakeOver(r *idem.Record, fp idem.Fingerprint, now time.Time) (ok bool, prev idem.Token) {
	switch {
	case r == nil:
		return true, 0
	case r.Status == idem.StatusInProgress && !r.LeaseLive(now) && r.Fingerprint == fp:
		return true, r.Token
	}
	return false, 0
}

// newLease issues the next token for key. The lock must be held.
func (s *mapStore) newLease(key string, fp idem.Fingerprint, ttl time.Duration, now time.Time, prev idem.Token) *idem.Lease {
	s.tokens++
	return &idem.Lease{Key: key, Token: s.tokens, Fingerprint: fp, PrevToken: prev, Expiry: now.Add(ttl)}
}

// claim issues a lease and stores key as in progress under it. The lock
// must be held.
func (s *mapStore) claim(key string, fp idem.Fingerprint, ttl time.Duration, now time.Time, prev idem.Token) *idem.Lease {
	l := s.newLease(key, fp, ttl, now, prev)
	s.hold(l)
	return l
}

// hold stores l's key as in progress under l. The lock must be held.
func (s *mapStore) hold(l *idem.Lease) {
	s.records[l.Key] = &idem.Record{
		Key: l.Key, Status: idem.StatusInProgress, Fingerprint: l.Fingerprint, FingerprintPolicy: l.FingerprintPolicy, Token: l.Token,
		LeaseExpiry: l.Expiry, ExpiresAt: s.keepUntil(l.Expiry),
	}
}

// owned returns the record of l.Key if it is in progress with l.Token, else
// ErrLeaseLost. The lock must be held.
func (s *mapStore) owned(l *idem.Lease, now time.Time) (*idem.Record, error) {
	r, err := s.live(l.Key, now)
	if err != nil {
		return nil, err
	}
	if r == nil || r.Status != idem.StatusInProgress || r.Token != l.Token {
		return nil, idem.ErrLeaseLost
	}
	return r, nil
}

// finished is the completed or failed record l's execution leaves behind.
func finished(l *idem.Lease, st idem.Status, resp idem.Response, now time.Time, retention time.Duration) *idem.Record {
	return &idem.Record{
		Key: l.Key, Status: st, Fingerprint: l.Fingerprint, FingerprintPolicy: l.FingerprintPolicy, Token: l.Token,
		Response: &resp, ExpiresAt: now.Add(retention),
	}
}

// locked is the frame of every call but Acquire: unless ctx is done, it
// runs f under the lock with the current time and returns its error.
func (s *mapStore) locked(ctx context.Context, f func(now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return f(s.clock.Now())
}

// acquire is the frame of an atomic Acquire: unless ctx is done, it reads
// the live record of key (nil if absent) under the lock and returns what
// decide makes of it, in the same critical section.
func (s *mapStore) acquire(ctx context.Context, key string, decide func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record)) (l *idem.Lease, rec *idem.Record, err error) {
	err = s.locked(ctx, func(now time.Time) error {
		r, err := s.live(key, now)
		if err == nil {
			l, rec = decide(r, now)
		}
		return err
	})
	return l, rec, err
}

// acquireClaimable is acquire for a design that answers a key it may not
// claim as a sound store does, with the record (see mayTakeOver): claim
// decides only for a claimable key, absent (r nil, prev 0) or in progress
// under an expired lease of fp (prev is the token a take-over replaces).
func (s *mapStore) acquireClaimable(ctx context.Context, key string, fp idem.Fingerprint, claim func(r *idem.Record, now time.Time, prev idem.Token) (*idem.Lease, *idem.Record)) (*idem.Lease, *idem.Record, error) {
	return s.acquire(ctx, key, func(r *idem.Record, now time.Time) (*idem.Lease, *idem.Record) {
		ok, prev := mayTakeOver(r, fp, now)
		if !ok {
			return nil, copyOf(r)
		}
		return claim(r, now, prev)
	})
}

// Acquire implements idem.Store atomically: one critical section.
func (s *mapStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.acquireClaimable(ctx, key, fp, func(_ *idem.Record, now time.Time, prev idem.Token) (*idem.Lease, *idem.Record) {
		return s.claim(key, fp, leaseTTL, now, prev), nil
	})
}

// acquirePolicy is Acquire for a request fingerprinted under policy, which
// the record keeps (idem.PolicyStore); only the designs that expose it
// keep policies.
func (s *mapStore) acquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := idem.ValidatePolicy(policy); err != nil {
		return nil, nil, err
	}
	return s.acquireClaimable(ctx, key, fp, func(r *idem.Record, now time.Time, prev idem.Token) (*idem.Lease, *idem.Record) {
		l := s.newLease(key, fp, leaseTTL, now, prev)
		l.FingerprintPolicy = policy
		if r != nil {
			l.FingerprintPolicy = r.FingerprintPolicy // a take-over keeps it
		}
		s.hold(l)
		return l, nil
	})
}

// Heartbeat implements idem.Store: it is fenced and extends the lease.
func (s *mapStore) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	return s.locked(ctx, func(now time.Time) error {
		r, err := s.owned(l, now)
		if err != nil {
			return err
		}
		s.extend(l, r, now.Add(leaseTTL))
		return nil
	})
}

// extend moves the lease of r, the in-progress record of l.Key, and l to
// expire at exp. The lock must be held.
func (s *mapStore) extend(l *idem.Lease, r *idem.Record, exp time.Time) {
	n := copyOf(r)
	n.LeaseExpiry = exp
	n.ExpiresAt = s.keepUntil(exp)
	s.records[l.Key] = n
	l.Expiry = exp
}

// Complete implements idem.Store: it is fenced.
func (s *mapStore) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusCompleted, resp, retention, s.fenced)
}

// Fail implements idem.Store: it is fenced.
func (s *mapStore) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusFailed, resp, retention, s.fenced)
}

// fenced returns idem.ErrLeaseLost unless l still holds its key. The lock
// must be held.
func (s *mapStore) fenced(l *idem.Lease, now time.Time) error {
	_, err := s.owned(l, now)
	return err
}

// finish stores the record l's execution leaves behind, with status st,
// unless check (nil: no check) refuses the write. Complete and Fail of
// every design go through it; the designs differ in check.
func (s *mapStore) finish(ctx context.Context, l *idem.Lease, st idem.Status, resp idem.Response, retention time.Duration, check func(l *idem.Lease, now time.Time) error) error {
	return s.locked(ctx, func(now time.Time) error {
		if check != nil {
			if err := check(l, now); err != nil {
				return err
			}
		}
		s.records[l.Key] = finished(l, st, resp, now, retention)
		return nil
	})
}

// Release implements idem.Store: it is fenced.
func (s *mapStore) Release(ctx context.Context, l *idem.Lease) error {
	return s.locked(ctx, func(now time.Time) error {
		if err := s.fenced(l, now); err != nil {
			return err
		}
		delete(s.records, l.Key)
		return nil
	})
}

// Get implements idem.Store.
func (s *mapStore) Get(ctx context.Context, key string) (rec *idem.Record, err error) {
	err = s.locked(ctx, func(now time.Time) error {
		r, err := s.found(key, now)
		if err != nil {
			return err
		}
		rec = copyOf(r)
		return nil
	})
	return rec, err
}

// Sweep implements idem.Sweeper: it removes every record past its expiry
// and returns how many it removed.
func (s *mapStore) Sweep(ctx context.Context) (removed int, err error) {
	err = s.locked(ctx, func(now time.Time) error {
		for k, r := range s.records {
			if !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
				delete(s.records, k)
				removed++
			}
		}
		return nil
	})
	return removed, err
}

// corrupt breaks the stored record of key so that reads report
// idem.ErrCorruptRecord; tests use it. It reports whether key had a record.
func (s *mapStore) corrupt(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[key]
	if r == nil {
		return false
	}
	c := copyOf(r)
	c.Token = 0
	s.records[key] = c
	return true
}

// Package memstore is the in-process idem.Store: a sharded map guarded by one
// mutex per shard, a global fencing counter, an injectable clock and a
// background sweeper. It is the embedded default of idembench and the
// reference against which the other backends are compared.
//
// Every transition is one critical section on the key's shard. Tokens come
// from one atomic counter for the whole store, so they never repeat for a
// key, also after Release and after a record expired. Records expire lazily
// on access and are removed by the sweeper; nothing survives the process.
package memstore

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/idem"
)

// Options configures a Store. The zero value is usable.
type Options struct {
	// Shards is the number of independently locked shards, rounded up to a
	// power of two. Zero means 64.
	Shards int
	// Clock tells the time for leases and retention. Nil means the system
	// clock.
	Clock idem.Clock
	// SweepInterval is how often the background sweeper removes expired
	// records. Zero means one minute; negative disables the sweeper (call
	// Sweep yourself).
	SweepInterval time.Duration
	// TakeoverGrace is how long an in-progress record whose lease expired is
	// kept, so that a take-over is recognised (Lease.PrevToken). Zero means
	// 24 hours.
	TakeoverGrace time.Duration
}

// Store is the in-memory idem.Store. It is safe for concurrent use. Close
// stops the sweeper.
type Store struct {
	shards  []shard
	mask    uint64
	seed    maphash.Seed
	tokens  atomic.Uint64
	clock   idem.Clock
	grace   time.Duration
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// Every capability the store has, in one place (the memory store has no
// idem.CorruptLister or idem.CorruptPurger: see admin.go).
var (
	_ idem.Store           = (*Store)(nil)
	_ idem.PolicyStore     = (*Store)(nil)
	_ idem.Sweeper         = (*Store)(nil)
	_ idem.Waiter          = (*Store)(nil)
	_ idem.BatchStore      = (*Store)(nil)
	_ idem.Lister          = (*Store)(nil)
	_ idem.UncertainLister = (*Store)(nil)
	_ idem.PrefixLister    = (*Store)(nil)
	_ idem.Statter         = (*Store)(nil)
)

type shard struct {
	mu      sync.Mutex
	entries map[string]*entry
	// pending holds the keys whose entry is in progress, so that listing
	// stuck records (the completer, every minute) does not read every
	// stored record.
	pending map[string]struct{}
	// changed holds, per key, a channel closed at the next change of that
	// key's in-progress record; created only by waiters.
	changed map[string]chan struct{}
	_       [40]byte // keep shards on separate cache lines
}

// entry is a stored record, read and written only under its shard's lock.
// An in-progress entry is updated in place by Heartbeat and by its
// completion; a completed or failed entry is never modified again, since
// readers keep a pointer to its response. The lease handed out by Acquire
// shares the entry's allocation and belongs to the caller.
type entry struct {
	status    idem.Status
	fp        idem.Fingerprint
	policy    string // fingerprint policy id
	token     idem.Token
	leaseExp  time.Time
	expires   time.Time
	hasResp   bool
	resp      idem.Response
	lease     idem.Lease // the caller's copy, returned by Acquire
	corrupted bool       // set only by tests, to exercise ErrCorruptRecord
}

// New returns a Store and starts its sweeper unless disabled.
func New(opts Options) *Store {
	n := 64
	if opts.Shards > 0 {
		n = 1
		for n < opts.Shards {
			n <<= 1
		}
	}
	s := &Store{
		shards: make([]shard, n),
		mask:   uint64(n - 1),
		seed:   maphash.MakeSeed(),
		clock:  opts.Clock,
		grace:  opts.TakeoverGrace,
	}
	if s.clock == nil {
		s.clock = idem.SystemClock{}
	}
	if s.grace <= 0 {
		s.grace = 24 * time.Hour
	}
	for i := range s.shards {
		s.shards[i].entries = make(map[string]*entry)
		s.shards[i].pending = make(map[string]struct{})
	}
	if opts.SweepInterval >= 0 {
		every := opts.SweepInterval
		if every == 0 {
			every = time.Minute
		}
		s.stop = make(chan struct{})
		s.stopped = make(chan struct{})
		go s.sweepLoop(every)
	}
	return s
}

// Close stops the sweeper and waits for it. It is safe to call more than
// once; the store stays usable.
func (s *Store) Close() error {
	s.once.Do(func() {
		if s.stop != nil {
			close(s.stop)
			<-s.stopped
		}
	})
	return nil
}

func (s *Store) shard(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&s.mask]
}

// live returns the entry of key unless it is absent or past its expiry, in
// which case it is removed. The shard lock must be held.
func (sh *shard) live(key string, now time.Time) *entry {
	e := sh.entries[key]
	if e != nil && !now.Before(e.expires) {
		sh.remove(key)
		return nil
	}
	return e
}

// remove deletes the entry of key. The shard lock must be held.
func (sh *shard) remove(key string) {
	delete(sh.entries, key)
	delete(sh.pending, key)
}

func (e *entry) record(key string) (*idem.Record, error) {
	r := &idem.Record{Key: key, Status: e.status, Fingerprint: e.fp, FingerprintPolicy: e.policy, Token: e.token, ExpiresAt: e.expires}
	if e.status == idem.StatusInProgress {
		r.LeaseExpiry = e.leaseExp
	}
	if e.hasResp {
		r.Response = &e.resp
	}
	if e.corrupted {
		r.Token = 0
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Acquire implements idem.Store.
func (s *Store) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.acquireLocked(sh, key, fp, "", leaseTTL, s.clock.Now())
}

// AcquirePolicy implements idem.PolicyStore.
func (s *Store) AcquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := idem.ValidatePolicy(policy); err != nil {
		return nil, nil, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.acquireLocked(sh, key, fp, policy, leaseTTL, s.clock.Now())
}

// acquireLocked is Acquire with sh's lock held.
func (s *Store) acquireLocked(sh *shard, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration, now time.Time) (*idem.Lease, *idem.Record, error) {
	e := sh.live(key, now)
	var prev idem.Token
	if e != nil {
		rec, err := e.record(key)
		if err != nil {
			return nil, nil, err
		}
		if e.status != idem.StatusInProgress || now.Before(e.leaseExp) || e.fp != fp {
			return nil, rec, nil
		}
		prev = e.token
		policy = e.policy // a take-over keeps the record's policy id
	}
	tok := idem.Token(s.tokens.Add(1))
	exp := now.Add(leaseTTL)
	n := &entry{status: idem.StatusInProgress, fp: fp, policy: policy, token: tok, leaseExp: exp, expires: exp.Add(s.grace),
		lease: idem.Lease{Key: key, Token: tok, Fingerprint: fp, FingerprintPolicy: policy, PrevToken: prev, Expiry: exp}}
	sh.entries[key] = n
	sh.pending[key] = struct{}{}
	if prev != 0 {
		sh.notify(key)
	}
	return &n.lease, nil, nil
}

// owned returns the entry of key if it is in progress with l's token.
// The shard lock must be held.
func (sh *shard) owned(l *idem.Lease, now time.Time) (*entry, error) {
	e := sh.live(l.Key, now)
	if e == nil || e.status != idem.StatusInProgress || e.token != l.Token {
		return nil, idem.ErrLeaseLost
	}
	if e.corrupted {
		_, err := e.record(l.Key)
		return nil, err
	}
	return e, nil
}

// Heartbeat implements idem.Store.
func (s *Store) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(l.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.clock.Now()
	e, err := sh.owned(l, now)
	if err != nil {
		return err
	}
	exp := now.Add(leaseTTL)
	e.leaseExp, e.expires = exp, exp.Add(s.grace)
	l.Expiry = exp
	return nil
}

// Complete implements idem.Store.
func (s *Store) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusCompleted, resp, retention)
}

// Fail implements idem.Store.
func (s *Store) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, l, idem.StatusFailed, resp, retention)
}

func (s *Store) finish(ctx context.Context, l *idem.Lease, st idem.Status, resp idem.Response, retention time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(l.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.finishLocked(l, st, resp, retention, s.clock.Now())
}

// finishLocked is Complete or Fail with sh's lock held.
func (sh *shard) finishLocked(l *idem.Lease, st idem.Status, resp idem.Response, retention time.Duration, now time.Time) error {
	e, err := sh.owned(l, now)
	if err != nil {
		return err
	}
	e.status, e.expires, e.leaseExp = st, now.Add(retention), time.Time{}
	e.hasResp, e.resp = true, resp
	delete(sh.pending, l.Key)
	sh.notify(l.Key)
	return nil
}

// Release implements idem.Store.
func (s *Store) Release(ctx context.Context, l *idem.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(l.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.releaseLocked(l, s.clock.Now())
}

// releaseLocked is Release with sh's lock held.
func (sh *shard) releaseLocked(l *idem.Lease, now time.Time) error {
	if _, err := sh.owned(l, now); err != nil {
		return err
	}
	sh.remove(l.Key)
	sh.notify(l.Key)
	return nil
}

// Get implements idem.Store.
func (s *Store) Get(ctx context.Context, key string) (*idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.live(key, s.clock.Now())
	if e == nil {
		return nil, idem.ErrNotFound
	}
	return e.record(key)
}

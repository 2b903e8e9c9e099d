package workload

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/idembench/idembench/idem"
)

// Effect is one attempt of the business side effect.
type Effect struct {
	Key string
	// Token is the fencing token of the lease the execution ran under.
	Token idem.Token
	// Exec identifies the execution.
	Exec string
	// Response is what the execution will answer if the effect is applied;
	// a recovering successor answers with it.
	Response idem.Response
}

// Sink receives the side effects of the business function. It is all
// every sink does; what some sinks do besides is an optional interface found
// by type assertion: LedgerKeeper (the ledger is in this process),
// LedgerReader (the ledger lives in a backend and is read back after the
// run), Recoverer (answers the engine's recovery lookup) and TxSink
// (commits the effect with the completion). Implementations are safe for
// concurrent use.
//
// In this module "ledger" means one thing: the record of which effects were
// applied, per key, that the checker judges (I1, I2, I5). The fence of a
// fenced sink (the highest token applied per key) is part of how a sink
// decides, not of the ledger.
type Sink interface {
	// Name is the sink's name ("plain", "fenced", "tx").
	Name() string
	// Apply applies e or rejects it and says which. An error means the
	// outcome is unknown.
	Apply(ctx context.Context, e Effect) (applied bool, err error)
}

// LedgerKeeper is a Sink that keeps its ledger in this process while the
// run goes on (the in-memory sinks of NewSink): the driver returns it in
// Result.Ledger and a progress display can read it live.
type LedgerKeeper interface {
	Sink
	// Ledger returns the sink's record of every effect it saw.
	Ledger() *Ledger
}

// LedgerReader is a Sink whose ledger lives in a backend, so that an effect
// outlives the process that applied it (workload/redissink,
// workload/pgsink). After the run the ledger is read back, and it is the
// whole truth: an effect it does not hold was not applied.
type LedgerReader interface {
	Sink
	// ReadLedger returns the applied effects of the given keys, or of every
	// key that starts with prefix where the backend can select by prefix
	// (a sink reads whichever it can; callers pass both), in apply order
	// per key.
	ReadLedger(ctx context.Context, prefix string, keys []string) ([]Applied, error)
}

// Applied is one applied effect as a backend ledger holds it.
type Applied struct {
	Effect
	// At is when it was applied, on the run's timeline (history.Now).
	At int64
}

// NewLedgerOf returns a Ledger that holds the applied effects es.
func NewLedgerOf(es []Applied) *Ledger {
	l := NewLedger()
	for _, e := range es {
		l.Record(e.Effect, true)
	}
	return l
}

// Recoverer is a Sink that can answer the engine's recovery question "did
// key K's effect already happen, and what did it answer?". token is the
// fencing token of the lease that asks (the one taking over). Recover must
// raise the key's fence to token no later than it looks ("fence, then
// look"; one atomic step where the sink can): a stale holder that applies
// after the look is then rejected, and one caught in the middle of its apply
// is waited out and found. A look alone is not enough even when apply is
// atomic: a stale holder applying between the look and the successor's own
// apply would be accepted (its token is still the highest seen), and so
// would the successor's.
type Recoverer interface {
	Recover(ctx context.Context, key string, token idem.Token) (resp idem.Response, done bool, err error)
}

// TxSink is a Sink whose effects commit in the same transaction as the
// engine's completion (Postgres transactional mode, pgstore.DoTx). The
// driver runs every execution through its Do instead of idem.Engine.Do:
// Do acquires the key, runs fn with a context from which Apply finds the
// transaction, and commits the effect together with the fenced
// completion, or rolls both back (a stale holder's completion is refused,
// so its effect never commits). The workload stays free of backend
// imports: workload/pgsink supplies the Postgres implementation.
//
// Until the transaction commits an applied effect is only pending, so the
// driver records every effect of a TxSink as unknown and the run's ledger
// (read after the run) settles it.
type TxSink interface {
	Sink
	Do(ctx context.Context, key string, fp idem.Fingerprint, opts TxEngine, fn idem.Func) (idem.Result, error)
}

// TxEngine is the engine configuration a TxSink runs executions with.
type TxEngine struct {
	// LeaseTTL, Heartbeat (zero: LeaseTTL/3, negative: off) and Retention
	// are the run's Engine settings, defaults filled in.
	LeaseTTL, Heartbeat, Retention time.Duration
	// Hook is the fault hook, or nil. A TxSink calls it at the engine's
	// points: after acquire and before fn inside the transaction, after fn
	// before the completion (an abort there rolls the effect back) and
	// after the commit (an abort there loses the reply).
	Hook idem.Hook
}

// Sink names for NewSink.
const (
	SinkPlain  = "plain"
	SinkFenced = "fenced"
	SinkTx     = "tx"
)

// ErrUnsupported reports a configuration this build cannot run yet.
var ErrUnsupported = errors.New("workload: not yet supported")

// NewSink returns the sink called name:
//
//   - "plain" applies every effect (no fencing, no recovery).
//   - "fenced" rejects an effect whose token is lower than the highest it
//     applied for the key, and implements Recoverer.
//   - "tx" (Postgres transactional mode) lives in the backend: NewSink
//     returns an error wrapping ErrUnsupported, and the caller builds a
//     TxSink on its Postgres store instead.
//
// Any other name is an error wrapping ErrConfig.
func NewSink(name string) (LedgerKeeper, error) {
	switch name {
	case SinkPlain:
		return &plainSink{l: NewLedger()}, nil
	case SinkFenced:
		return &fencedSink{l: NewLedger()}, nil
	case SinkTx:
		return nil, fmt.Errorf("%w: sink %q (Postgres transactional mode) is reserved for the Postgres backend", ErrUnsupported, name)
	}
	return nil, configErr("unknown sink %q (want plain, fenced or tx)", name)
}

type plainSink struct{ l *Ledger }

func (s *plainSink) Name() string    { return SinkPlain }
func (s *plainSink) Ledger() *Ledger { return s.l }

func (s *plainSink) Apply(ctx context.Context, e Effect) (bool, error) {
	s.l.apply(e, false)
	return true, nil
}

type fencedSink struct{ l *Ledger }

var _ Recoverer = (*fencedSink)(nil)

func (s *fencedSink) Name() string    { return SinkFenced }
func (s *fencedSink) Ledger() *Ledger { return s.l }

func (s *fencedSink) Apply(ctx context.Context, e Effect) (bool, error) {
	return s.l.apply(e, true), nil
}

// Recover raises key's fence to token and returns the response of the first
// applied effect of key, in one critical section.
func (s *fencedSink) Recover(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	if err := ctx.Err(); err != nil {
		return idem.Response{}, false, err
	}
	return s.l.fenceAndFirst(key, token)
}

// Ledger records, per key, every effect a sink saw and whether it applied
// it. It is safe for concurrent use.
type Ledger struct {
	seed   maphash.Seed
	shards [64]ledgerShard
}

type ledgerShard struct {
	mu   sync.Mutex
	keys map[string]*keyLedger
	_    [40]byte
}

// keyLedger is the ledger of one key. The first applied effect is kept
// inline: almost every key has exactly one.
type keyLedger struct {
	highest  idem.Token // highest applied token
	first    Effect     // valid when n > 0
	more     []Effect   // applied effects after the first, in apply order
	n        int        // number of applied effects
	rejected []string   // execution ids of rejected effects
}

func (en *keyLedger) applied() []Effect {
	if en.n == 0 {
		return nil
	}
	return append([]Effect{en.first}, en.more...)
}

// LedgerStats summarises a Ledger.
type LedgerStats struct {
	Keys     int `json:"keys"`     // keys with at least one effect attempt
	Applied  int `json:"applied"`  // effects applied
	Rejected int `json:"rejected"` // effects rejected by fencing
	// Doubled counts keys with more than one applied effect: each is an
	// at-most-once (I1) violation, whatever the checker says.
	Doubled int `json:"doubled"`
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger {
	l := &Ledger{seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].keys = make(map[string]*keyLedger)
	}
	return l
}

func (l *Ledger) shard(key string) *ledgerShard {
	return &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
}

// apply records e; with fence, e is rejected when a higher token was already
// applied for its key. It reports whether e was applied.
func (l *Ledger) apply(e Effect, fence bool) (applied bool) {
	l.withKey(e.Key, func(en *keyLedger) {
		if fence && e.Token < en.highest {
			en.rejected = append(en.rejected, e.Exec)
			return
		}
		en.highest = max(en.highest, e.Token)
		if en.n == 0 {
			en.first = e
		} else {
			en.more = append(en.more, e)
		}
		en.n++
		applied = true
	})
	return applied
}

// withKey runs f on the entry of key, made when the key is new, under its
// shard's lock.
func (l *Ledger) withKey(key string, f func(en *keyLedger)) {
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	en := sh.keys[key]
	if en == nil {
		en = &keyLedger{}
		sh.keys[key] = en
	}
	f(en)
}

// Record adds e to the ledger as applied or rejected, with no fencing of
// its own: it is how the ledger of a LedgerReader is rebuilt after the run.
func (l *Ledger) Record(e Effect, applied bool) {
	if applied {
		l.apply(e, false)
		return
	}
	l.withKey(e.Key, func(en *keyLedger) { en.rejected = append(en.rejected, e.Exec) })
}

// fenceAndFirst raises key's highest token to token, so that a lower one is
// rejected from now on, and returns the response of key's first applied
// effect.
func (l *Ledger) fenceAndFirst(key string, token idem.Token) (first idem.Response, ok bool, err error) {
	l.withKey(key, func(en *keyLedger) {
		en.highest = max(en.highest, token)
		if en.n > 0 {
			first, ok = en.first.Response, true
		}
	})
	return first, ok, nil
}

// Lookup reports whether the effect of execution exec on key was applied;
// ok is false when the ledger never saw it. It is what history.ResolveEffects
// asks after a run.
func (l *Ledger) Lookup(key, exec string) (applied, ok bool) {
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	en := sh.keys[key]
	if en == nil {
		return false, false
	}
	if en.n > 0 && en.first.Exec == exec {
		return true, true
	}
	for i := range en.more {
		if en.more[i].Exec == exec {
			return true, true
		}
	}
	for _, x := range en.rejected {
		if x == exec {
			return false, true
		}
	}
	return false, false
}

// Applied returns the applied effects of key, in apply order.
func (l *Ledger) Applied(key string) []Effect {
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if en := sh.keys[key]; en != nil {
		return en.applied()
	}
	return nil
}

// Stats counts the ledger's contents.
func (l *Ledger) Stats() LedgerStats {
	var s LedgerStats
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, en := range sh.keys {
			if en.n == 0 && len(en.rejected) == 0 {
				continue // only a fence a recovery lookup raised
			}
			s.Keys++
			s.Applied += en.n
			s.Rejected += len(en.rejected)
			if en.n > 1 {
				s.Doubled++
			}
		}
		sh.mu.Unlock()
	}
	return s
}

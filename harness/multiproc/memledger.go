package multiproc

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/workload"
)

// Memory-backed workers.
//
// A joined run on the memory backend gives each worker a memory store and
// an effect ledger of its own: keys are sharded by host (each worker draws
// keys of its own), so no key needs a store another worker sees. When its
// traffic is over (its liveness probe included, which is in its history),
// the worker sends its ledger to the coordinator with its history
// (MethodLedger); the coordinator merges the workers' ledgers and uses the
// result as it uses a backend ledger read back after the run: the whole
// truth about which effects were applied. Nothing needs the stores
// themselves after the run.

// MethodLedger, an event from a memory-backed worker before its
// MethodLatency: applied effects of its ledger (a []workload.Applied, in
// apply order per key, without their responses), in chunks.
const MethodLedger = "ledger"

// memSink is the effect sink of a memory-backed worker: an in-memory sink
// of workload.NewSink, whose applied effects it also keeps with the time
// they were applied, in apply order per key, to send to the coordinator.
type memSink struct {
	inner workload.LedgerKeeper
	now   func() int64 // the worker's corrected clock; set before the traffic
	seed  maphash.Seed
	// shards serialise the applies of one key, so that the order kept
	// here is the inner ledger's.
	shards [64]memShard
}

type memShard struct {
	mu      sync.Mutex
	applied []workload.Applied
	_       [32]byte
}

var _ workload.Recoverer = (*memSink)(nil)

func newMemSink(name string) (*memSink, error) {
	if name == workload.SinkTx {
		return nil, harness.ConfigError("sink tx (the engine's transactional mode) needs backend postgres")
	}
	inner, err := workload.NewSink(name)
	if err != nil {
		return nil, harness.ConfigError("%w", err)
	}
	return &memSink{inner: inner, now: history.Now, seed: maphash.MakeSeed()}, nil
}

func (s *memSink) Name() string { return s.inner.Name() }

func (s *memSink) shard(key string) *memShard {
	return &s.shards[maphash.String(s.seed, key)%uint64(len(s.shards))]
}

func (s *memSink) Apply(ctx context.Context, e workload.Effect) (bool, error) {
	sh := s.shard(e.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	applied, err := s.inner.Apply(ctx, e)
	if err == nil && applied {
		e.Response = idem.Response{} // the coordinator needs who and when, not what
		sh.applied = append(sh.applied, workload.Applied{Effect: e, At: s.now()})
	}
	return applied, err
}

// Recover answers the engine's recovery lookup from the inner sink (the
// fenced one: a run with recovery has it).
func (s *memSink) Recover(ctx context.Context, key string, token idem.Token) (idem.Response, bool, error) {
	r, ok := s.inner.(workload.Recoverer)
	if !ok {
		return idem.Response{}, false, fmt.Errorf("multiproc: sink %s answers no recovery lookups", s.inner.Name())
	}
	return r.Recover(ctx, key, token)
}

// entries returns every applied effect, in apply order per key.
func (s *memSink) entries() []workload.Applied {
	var out []workload.Applied
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		out = append(out, sh.applied...)
		sh.mu.Unlock()
	}
	return out
}

// sentLedger is the coordinator's merge of the ledgers memory-backed
// workers sent. Keys are sharded by host, so one key's effects come from
// one worker, in its apply order.
type sentLedger struct {
	mu      sync.Mutex
	applied []workload.Applied
}

func (l *sentLedger) add(es []workload.Applied) {
	l.mu.Lock()
	l.applied = append(l.applied, es...)
	l.mu.Unlock()
}

// ReadLedger returns the applied effects of keys, or, when keys is empty,
// of every key that starts with prefix.
func (l *sentLedger) ReadLedger(_ context.Context, prefix string, keys []string) ([]workload.Applied, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	var out []workload.Applied
	for _, e := range l.applied {
		if want[e.Key] || len(keys) == 0 && strings.HasPrefix(e.Key, prefix) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ledgerSource is where assemble reads the run's ledger: a backend sink
// (workload.LedgerReader) or the ledgers memory-backed workers sent.
type ledgerSource interface {
	ReadLedger(ctx context.Context, prefix string, keys []string) ([]workload.Applied, error)
}

// errLedgerDisagrees is an environment error of a memory-backed run whose
// workers' histories record an applied effect that their ledgers lack: a
// ledger lost or cut short on its way, which the check must not pass over.
var errLedgerDisagrees = errors.New("the workers' ledgers lack effects their histories record as applied")

// checkLedgerHolds returns an error naming the first effect h records as
// applied that led does not hold, and how many there are.
func checkLedgerHolds(h *history.History, led *workload.Ledger) error {
	n, first := 0, ""
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindEffect || !op.Applied || op.Outcome == history.Unknown {
			continue
		}
		if applied, _ := led.Lookup(op.Key, op.Exec); !applied {
			if n++; n == 1 {
				first = op.Key + " (execution " + op.Exec + ")"
			}
		}
	}
	if n > 0 {
		return harness.EnvironmentError(fmt.Errorf("%w: %d, the first %s", errLedgerDisagrees, n, first))
	}
	return nil
}

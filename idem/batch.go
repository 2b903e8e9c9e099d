package idem

import (
	"context"
	"fmt"
	"time"
)

// AcquireRequest is one key of a batch claim.
type AcquireRequest struct {
	Key         string
	Fingerprint Fingerprint
}

// AcquireResult is a batch claim's answer for one key, as Store.Acquire
// would give it: exactly one of Lease, Record and Err is set.
type AcquireResult struct {
	Lease  *Lease
	Record *Record
	Err    error
}

// Finish is one fenced write of a batch finish: Kind says which, Response
// is stored by FinishComplete and FinishFail.
type Finish struct {
	Kind     FinishKind
	Lease    *Lease
	Response Response
}

// BatchStore is implemented by stores that claim and finish many keys in
// one round trip. Per key the semantics are exactly those of Acquire,
// Complete, Fail and Release, as if the calls ran one after the other in
// some order; the keys of one call are distinct. Both methods return one
// entry per request, in order. A store error that hits the whole batch is
// reported in every entry.
type BatchStore interface {
	AcquireBatch(ctx context.Context, reqs []AcquireRequest, leaseTTL time.Duration) []AcquireResult
	FinishBatch(ctx context.Context, fs []Finish, retention time.Duration) []error
}

// BatchItem is one request of DoBatch.
type BatchItem struct {
	Key         string
	Fingerprint Fingerprint
	Fn          Func
}

// BatchResult is DoBatch's answer for one item: what Do would have returned.
type BatchResult struct {
	Result Result
	Err    error
}

// DoBatch runs items as Do would, one after the other in order, but claims
// their keys with one store call and records their outcomes with one more,
// when the store is a BatchStore (otherwise it makes Do's calls key by key).
// Per item the answer is Do's: replay, ErrInProgress (DoBatch never waits:
// WithConflictWait does not apply), ErrFingerprintMismatch, ErrInvalidKey,
// a claim that runs Fn, a take-over with recovery, fencing. An item whose
// key appeared earlier in the batch is answered after the earlier one is
// recorded, as its duplicate delivered next would be (typically a replay).
//
// The functions run one at a time, each under its lease's heartbeat; a
// claimed key whose turn has not come yet keeps its lease by heartbeat too.
// The outcomes are written together after the last function: until then an
// execution's lease may lapse if the batch runs longer than the lease TTL
// (the write is then refused by fencing and reported as ErrLeaseLost), so
// keep batches short next to the TTL. A panic in Fn releases that key and
// continues; the other claimed keys keep their leases until they expire.
func (e *Engine) DoBatch(ctx context.Context, items []BatchItem) []BatchResult {
	return e.DoBatchScoped(ctx, "", items)
}

// DoBatchScoped is DoBatch with every key in scope (see DoScoped).
func (e *Engine) DoBatchScoped(ctx context.Context, scope string, items []BatchItem) []BatchResult {
	out := make([]BatchResult, len(items))
	keys := make([]string, len(items))
	todo := make([]int, 0, len(items))
	for i, it := range items {
		k, err := StorageKey(it.Key, e.cfg.scope, scope)
		if err != nil {
			out[i].Err = err
			continue
		}
		keys[i] = k
		todo = append(todo, i)
	}
	for len(todo) > 0 {
		round, later := splitDuplicates(keys, todo)
		e.batchRound(ctx, items, keys, round, out)
		todo = later
	}
	return out
}

// splitDuplicates returns the items of todo whose key is the first of its
// kind, and the rest, both in order.
func splitDuplicates(keys []string, todo []int) (round, later []int) {
	seen := make(map[string]struct{}, len(todo))
	for _, i := range todo {
		if _, dup := seen[keys[i]]; dup {
			later = append(later, i)
			continue
		}
		seen[keys[i]] = struct{}{}
		round = append(round, i)
	}
	return round, later
}

// claimed is one execution of a batch round.
type claimed struct {
	item  int
	lease *Lease
	x     *execution // heartbeat while the item waits for its turn
	o     outcome
}

// batchRound claims the keys of round (distinct), runs the claimed items'
// functions and records their outcomes.
func (e *Engine) batchRound(ctx context.Context, items []BatchItem, keys []string, round []int, out []BatchResult) {
	reqs := make([]AcquireRequest, len(round))
	for j, i := range round {
		reqs[j] = AcquireRequest{Key: keys[i], Fingerprint: items[i].Fingerprint}
	}
	t0 := e.now()
	answers := e.acquireBatch(ctx, reqs)
	tm := timing{mark: e.now()}
	tm.claim = tm.mark.Sub(t0)

	var run []claimed
	for j, i := range round {
		a, fp := answers[j], items[i].Fingerprint
		e.observeClaim(ctx, keys[i], fp, a.Lease, a.Record, a.Err, tm)
		switch {
		case a.Err != nil:
			out[i].Err = fmt.Errorf("idem: acquire %q: %w", items[i].Key, a.Err)
		case a.Lease != nil:
			// The waiting lease is kept alive; it is stopped when its
			// function starts under its own execution.
			run = append(run, claimed{item: i, lease: a.Lease, x: e.startExecution(ctx, a.Lease)})
		default:
			res, final, err := answer(items[i].Key, fp, a.Record)
			if !final {
				err = fmt.Errorf("%w: key %q", ErrInProgress, items[i].Key)
			}
			out[i] = BatchResult{Result: res, Err: err}
		}
	}
	next := 0 // run[next:] still wait, their heartbeat running
	defer func() {
		for _, c := range run[next:] {
			c.x.stop() // a function panicked: stop the waiting heartbeats
		}
	}()
	for next < len(run) {
		c := &run[next]
		c.x.stop()
		next++
		c.o = e.run(ctx, c.lease, items[c.item].Fn, tm)
	}
	e.finishBatch(ctx, run)
	for j := range run {
		c := &run[j]
		if c.o.kind == 0 {
			out[c.item] = BatchResult{Result: c.o.res, Err: c.o.err}
		}
	}
	for j := range run {
		c := &run[j]
		if c.o.kind != 0 {
			res, err := e.recorded(ctx, c.lease, &c.o, c.o.err)
			out[c.item] = BatchResult{Result: res, Err: err}
		}
	}
}

// acquireBatch claims reqs with one call of a BatchStore, or key by key.
func (e *Engine) acquireBatch(ctx context.Context, reqs []AcquireRequest) []AcquireResult {
	if bs, ok := e.store.(BatchStore); ok {
		res := bs.AcquireBatch(ctx, reqs, e.cfg.leaseTTL)
		if len(res) == len(reqs) {
			return res
		}
		err := BackendError("acquire batch", fmt.Errorf("%d answers for %d keys", len(res), len(reqs)))
		res = make([]AcquireResult, len(reqs))
		for i := range res {
			res[i].Err = MarkAmbiguous(err)
		}
		return res
	}
	res := make([]AcquireResult, len(reqs))
	for i, r := range reqs {
		res[i].Lease, res[i].Record, res[i].Err = e.store.Acquire(ctx, r.Key, r.Fingerprint, e.cfg.leaseTTL)
	}
	return res
}

// finishBatch makes the writes of the executions in run that have one, with
// one call of a BatchStore or key by key, and leaves each write's error in
// its outcome's err field.
func (e *Engine) finishBatch(ctx context.Context, run []claimed) {
	var idx []int
	var fs []Finish
	for j := range run {
		if run[j].o.kind == FinishUncertain {
			run[j].o.err = e.write(ctx, run[j].lease, &run[j].o) // rare: not batched
			continue
		}
		if run[j].o.kind != 0 {
			idx = append(idx, j)
			fs = append(fs, Finish{Kind: run[j].o.kind, Lease: run[j].lease, Response: run[j].o.resp})
		}
	}
	if len(fs) == 0 {
		return
	}
	bs, ok := e.store.(BatchStore)
	if !ok {
		for _, j := range idx {
			c := &run[j]
			c.o.err = e.write(ctx, c.lease, &c.o)
		}
		return
	}
	fctx, cancel := e.finishCtx(ctx)
	errs := bs.FinishBatch(fctx, fs, e.cfg.retention)
	cancel()
	for n, j := range idx {
		c := &run[j]
		if len(errs) == len(fs) {
			c.o.err = errs[n]
		} else {
			c.o.err = MarkAmbiguous(BackendError("finish batch", fmt.Errorf("%d answers for %d writes", len(errs), len(fs))))
		}
		e.observeFinish(ctx, c.lease, &c.o, c.o.err)
	}
}

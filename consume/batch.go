package consume

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// batchState is what one pulled batch's processing learned, passed down in
// its context to the handler, the recovery hook and the fault hook, which
// find a message's callState by key: the engine claims a batch's distinct
// keys together and a duplicate inside the batch in a later round, so
// while a key is being processed exactly one of its deliveries is.
type batchState struct {
	consumer int
	mu       sync.Mutex
	queued   map[string][]*callState // per key, the deliveries not claimed yet
	current  map[string]*callState   // per key, the delivery being processed
	crashed  bool                    // the crash fault struck in this batch
	ds       []delivery
	ops      []history.Op
	sts      []*callState
}

type batchKey struct{}

func batchFrom(ctx context.Context) *batchState {
	bs, _ := ctx.Value(batchKey{}).(*batchState)
	return bs
}

// stateOf returns the callState of the delivery of key being processed
// under ctx: the one of a batch, or the one of a single delivery.
func stateOf(ctx context.Context, key string) *callState {
	bs := batchFrom(ctx)
	if bs == nil {
		return stateFrom(ctx)
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if st := bs.current[key]; st != nil {
		return st
	}
	return &callState{consumer: bs.consumer}
}

// claim makes the next queued delivery of key the current one (the engine
// acquired key for it) and reports whether the batch has crashed already:
// then the delivery is not processed, as in a consumer that died.
func (bs *batchState) claim(key string) (crashed bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if q := bs.queued[key]; len(q) > 0 {
		bs.current[key], bs.queued[key] = q[0], q[1:]
	}
	return bs.crashed
}

func (bs *batchState) crash() {
	bs.mu.Lock()
	bs.crashed = true
	bs.mu.Unlock()
}

func (bs *batchState) hasCrashed() bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.crashed
}

// handleBatch processes a pulled batch with one ConsumeBatch (the
// adapter's ProcessBatch), then records and settles each delivery as
// handle does. It reports whether the consumer crashed: then nothing of
// the batch was settled, every delivery was recorded with an unknown
// outcome and the broker redelivers them all.
//
// The crash strikes after a target message's effect (idem.PointAfterFn).
// In a worker process the hook kills the process right there, before the
// batch's outcomes are recorded in the store, as a real crash would. In
// process the batch's later messages are not processed (their hooks
// return the crash) and nothing is acked, but the outcomes of the messages
// before the target are still recorded: the engine writes them together
// after the last handler and cannot be stopped from outside.
func (n *node) handleBatch(ctx context.Context, id int, sub subscription, ds []delivery) (crashed bool) {
	bs := &batchState{consumer: id, queued: map[string][]*callState{}, current: map[string]*callState{}, ds: ds}
	for _, d := range ds {
		var m message
		_ = json.Unmarshal(d.body(), &m)
		st := &callState{consumer: id}
		bs.sts = append(bs.sts, st)
		bs.queued[d.key()] = append(bs.queued[d.key()], st)
		bs.ops = append(bs.ops, history.Op{Kind: history.KindCall, Client: id, Worker: id, Key: d.key(), Request: int64(m.N),
			Attempt: d.attempt(), FP: history.FingerprintID(idem.NewFingerprint(d.body())), Call: n.now()})
	}
	n.co.batched(len(ds))
	cs := sub.processBatch(context.WithValue(withRunDone(ctx), batchKey{}, bs), ds)
	for _, d := range ds {
		n.co.passed(d.key(), false)
	}
	if bs.hasCrashed() || slices.ContainsFunc(cs, func(c idem.Consumed) bool { return errors.Is(c.Err, errCrash) }) {
		n.abandonBatch(bs)
		return true
	}
	now := n.now()
	for i, d := range ds {
		op := bs.ops[i]
		op.Return = now
		var m message
		_ = json.Unmarshal(d.body(), &m)
		outcome(&op, bs.sts[i], cs[i].Decision, cs[i].Err, m.Poison)
		n.co.record(op)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for i, d := range ds {
		serr := d.settle(sctx, cs[i].Decision, cs[i].Err)
		n.co.delivered(d.redelivered(), cs[i].Decision, serr == nil)
	}
	return false
}

// abandonBatch records every delivery of a crashed batch with an unknown
// outcome (the consumer died holding them all; whatever ran may or may not
// have had its effect) and counts them abandoned.
func (n *node) abandonBatch(bs *batchState) {
	for i, d := range bs.ds {
		op, st := bs.ops[i], bs.sts[i]
		op.Outcome, op.Return, op.Token, op.Exec = history.Unknown, history.NoReturn, uint64(st.token), st.exec
		op.Err = "consumer crashed holding this batch, before any ack"
		n.co.record(op)
		n.co.delivered(d.redelivered(), abandoned, false)
	}
}

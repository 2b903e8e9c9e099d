package workload

import (
	"context"
	"sync"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// pulled is one delivery of a consumer's batch with its attempts so far.
type pulled struct {
	dl   delivery
	fp   idem.Fingerprint
	fpID string
	n    int // the attempt the next send makes
}

// deliverBatch sends dls as a consumer that pulled them together: one
// Engine.DoBatch call per attempt for every delivery still without a final
// answer, with the backoff between attempts. It marks keys for the liveness
// probe as deliver does.
func (c *client) deliverBatch(ctx context.Context, dls []delivery) {
	c.d.deliveries.Add(int64(len(dls)))
	todo := make([]pulled, len(dls))
	for i, dl := range dls {
		fp, fpID := fingerprint(dl.key, dl.mismatch)
		todo[i] = pulled{dl: dl, fp: fp, fpID: fpID, n: 1}
		c.last, c.lastSeq = dl.key, dl.seq
	}
	r := &c.d.cfg.Retry
	for len(todo) > 0 {
		outcomes := c.callBatch(ctx, todo)
		next := todo[:0]
		for i, p := range todo {
			if final(outcomes[i]) {
				continue
			}
			// As in deliver: a delivery without a final answer marks its
			// key for the liveness probe, retried or not.
			c.pending[p.dl.key] = p.dl.seq
			if p.n >= r.MaxAttempts || ctx.Err() != nil || c.d.pastDrain() {
				continue
			}
			p.n++
			next = append(next, p)
		}
		todo = next
		if len(todo) > 0 {
			c.sleep(ctx, c.backoff(todo[0].n-1))
		}
	}
}

// callBatch makes one Engine.DoBatch call for ps, records one call op per
// delivery, each spanning the whole batch call, and returns their outcomes.
func (c *client) callBatch(ctx context.Context, ps []pulled) []history.Outcome {
	d := c.d
	start := d.now()
	items := make([]idem.BatchItem, len(ps))
	xs := make([]*execution, len(ps))
	ops := make([]history.Op, len(ps))
	calls := newBatchCalls(len(ps))
	for i, p := range ps {
		c.calls++
		x := d.newExecution(&Attempt{Key: p.dl.key, Request: p.dl.req, N: p.n, Client: c.id, Calls: c.calls, Rand: c.rng})
		xs[i] = x
		ops[i] = history.Op{
			Kind:    history.KindCall,
			Client:  c.id,
			Worker:  c.id,
			Key:     p.dl.key,
			Request: p.dl.req,
			Attempt: p.n,
			FP:      p.fpID,
			Call:    start,
		}
		if p.n == 1 {
			ops[i].Intended = p.dl.intended
		}
		items[i] = idem.BatchItem{Key: p.dl.key, Fingerprint: p.fp, Fn: calls.add(d, x, start, d.business(x))}
	}
	res := d.eng.DoBatch(context.WithValue(ctx, batchCallsKey{}, calls), items)
	end := d.now()
	out := make([]history.Outcome, len(ps))
	for i := range ops {
		op := &ops[i]
		op.Return = end
		d.observe(op, end)
		classify(op, res[i].Result, res[i].Err, xs[i])
		d.rec.Record(*op)
		out[i] = op.Outcome
	}
	return out
}

// batchCalls tells the lease recorder which item of a DoBatch call an
// engine event belongs to. The events carry the storage key, not the item:
// a key's first claim answer belongs to its first item in the batch, its
// second to the second (DoBatch answers a key's duplicates in later
// rounds, one round after the other), and every other event of the key to
// the item whose claim answer came last.
type batchCalls struct {
	mu      sync.Mutex
	byKey   map[string][]*leaseCall
	claims  map[string]int
	current map[string]*leaseCall
}

type batchCallsKey struct{}

func newBatchCalls(n int) *batchCalls {
	return &batchCalls{
		byKey:   make(map[string][]*leaseCall, n),
		claims:  make(map[string]int, n),
		current: make(map[string]*leaseCall, n),
	}
}

// add registers execution x's item and returns its function wrapped as
// withLeaseCall wraps it. start precedes the batch's claim; it is also the
// first heartbeat floor, as a claimed item's lease is renewed while it
// waits for its turn.
func (b *batchCalls) add(d *driver, x *execution, start int64, fn idem.Func) idem.Func {
	ctx, wrapped := d.withLeaseCall(context.Background(), x, start, fn)
	lc := ctx.Value(leaseCallKey{}).(*leaseCall)
	lc.beatFloor.Store(start)
	if sk, err := idem.StorageKey(x.key); err == nil {
		b.byKey[sk] = append(b.byKey[sk], lc)
	} // an invalid key is answered without reaching the store
	return wrapped
}

// lookup returns the call an event of the batch belongs to, or nil.
func (b *batchCalls) lookup(ev idem.Event) *leaseCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.AnswersClaim() {
		calls := b.byKey[ev.Key]
		n := b.claims[ev.Key]
		b.claims[ev.Key] = n + 1
		if n >= len(calls) {
			delete(b.current, ev.Key)
			return nil
		}
		b.current[ev.Key] = calls[n]
	}
	return b.current[ev.Key]
}

// pull returns the next n deliveries of s, as a consumer pulls a batch.
func (s *source) pull(n int) []delivery {
	dls := make([]delivery, 0, n)
	for range n {
		d, ok := s.next()
		if !ok {
			break
		}
		dls = append(dls, d)
	}
	return dls
}

// pullMore returns first and up to n-1 more deliveries already waiting in
// jobs, without waiting for any: an open-loop consumer takes what has
// arrived.
func pullMore(jobs <-chan delivery, first delivery, n int) []delivery {
	dls := []delivery{first}
	for len(dls) < n {
		select {
		case dl, ok := <-jobs:
			if !ok {
				return dls
			}
			dls = append(dls, dl)
		default:
			return dls
		}
	}
	return dls
}

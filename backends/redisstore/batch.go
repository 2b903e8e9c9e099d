package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idembench/idembench/idem"
)

// AcquireBatch implements idem.BatchStore: one pipeline of the same script
// Acquire runs, one call per key, so each key is claimed atomically in its
// own hash slot and a Cluster client sends each node its keys in one round
// trip. A script the server has not cached yet costs the keys that met it
// one more round trip, once. With Options.WaitReplicas every key is claimed
// with Acquire, one after the other, each followed by its WAIT.
func (s *Store) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, leaseTTL time.Duration) []idem.AcquireResult {
	out := make([]idem.AcquireResult, len(reqs))
	if s.opts.WaitReplicas > 0 {
		for i, r := range reqs {
			out[i].Lease, out[i].Record, out[i].Err = s.Acquire(ctx, r.Key, r.Fingerprint, leaseTTL)
		}
		return out
	}
	if err := idem.ValidateLeaseTTL(leaseTTL); err != nil {
		return idem.AcquireBatchFailed(len(reqs), fmt.Errorf("redisstore: acquire: %w", err))
	}
	if err := ctx.Err(); err != nil {
		return idem.AcquireBatchFailed(len(reqs), err)
	}
	keys := make([]keyset, len(reqs))
	calls := make([]scriptCall, 0, len(reqs))
	ids, ttl := s.batchIDs(len(reqs)), millis(leaseTTL)
	for i, r := range reqs {
		if err := idem.ValidateKey(r.Key); err != nil {
			out[i].Err = err
			continue
		}
		keys[i] = keysFor(s.opts.Prefix, r.Key)
		calls = append(calls, scriptCall{i: i, script: acquireScript, keys: []string{keys[i].record, keys[i].fence()},
			args: []any{r.Fingerprint.String(), ttl, s.graceMS, ids.next(r.Key), keys[i].slot, ""}})
	}
	for _, c := range s.pipeline(ctx, s.merge(calls, multiAcquire)) {
		idx, replies, err := c.replies()
		for n, i := range idx {
			res, rerr := replySlice(replies[n], err)
			r := &out[i]
			r.Lease, r.Record, r.Err = s.acquireReply(reqs[i].Key, reqs[i].Fingerprint, "", keys[i], res, rerr)
		}
	}
	return out
}

// batchIDs hands out the call ids of a batch's writes: one id for every
// key, so that a merged call sends it once (a record's acq_id or done_id
// only tells whether this call wrote that record), and a fresh id for a key
// met before in the batch (the keys of a batch should be distinct), so
// that its second write is not taken for a client-side retry of its first.
type batchIDs struct {
	s    *Store
	id   string
	seen map[string]struct{}
}

func (s *Store) batchIDs(n int) *batchIDs {
	return &batchIDs{s: s, id: s.callID(), seen: make(map[string]struct{}, n)}
}

// next returns the call id of the write of key.
func (b *batchIDs) next(key string) string {
	if _, dup := b.seen[key]; dup {
		return b.s.callID()
	}
	b.seen[key] = struct{}{}
	return b.id
}

// replySlice is one entry's reply as a script table.
func replySlice(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	res, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redisstore: script reply %v is not a table", v)
	}
	return res, nil
}

// replyInt64 is one entry's reply as an integer.
func replyInt64(v any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("redisstore: script reply %v is not an integer", v)
	}
	return n, nil
}

// FinishBatch implements idem.BatchStore: one pipeline of the fenced
// scripts Complete, Fail and Release run, one call per write. With
// Options.WaitReplicas every write is made on its own, each followed by its
// WAIT.
func (s *Store) FinishBatch(ctx context.Context, fs []idem.Finish, retention time.Duration) []error {
	out := make([]error, len(fs))
	if s.opts.WaitReplicas > 0 {
		for i, f := range fs {
			out[i] = s.finishOne(ctx, f, retention)
		}
		return out
	}
	if err := ctx.Err(); err != nil {
		return idem.FinishBatchFailed(len(fs), err)
	}
	keys := make([]keyset, len(fs))
	calls := make([]scriptCall, 0, len(fs))
	ids, ret := s.batchIDs(len(fs)), millis(retention)
	for i, f := range fs {
		if f.Lease == nil {
			out[i] = fmt.Errorf("redisstore: %s: nil lease", f.Kind)
			continue
		}
		if err := idem.ValidateKey(f.Lease.Key); err != nil {
			out[i] = err
			continue
		}
		keys[i] = keysFor(s.opts.Prefix, f.Lease.Key)
		c := scriptCall{i: i, keys: []string{keys[i].record}, args: []any{strconv.FormatUint(uint64(f.Lease.Token), 10)}}
		switch f.Kind {
		case idem.FinishComplete, idem.FinishFail:
			if retention <= 0 {
				out[i] = fmt.Errorf("redisstore: %s: retention %v is not positive", f.Kind, retention)
				continue
			}
			st := idem.StatusCompleted
			if f.Kind == idem.FinishFail {
				st = idem.StatusFailed
			}
			c.script = finishScript
			c.args = append(c.args, st.String(), idem.EncodeResponse(&f.Response), ret, ids.next(f.Lease.Key))
		case idem.FinishRelease:
			c.script = releaseScript
		default:
			out[i] = fmt.Errorf("redisstore: finish batch: unknown finish kind %s", f.Kind)
			continue
		}
		calls = append(calls, c)
	}
	for _, c := range s.pipeline(ctx, s.merge(calls, multiFinish, multiRelease)) {
		idx, replies, err := c.replies()
		for n, i := range idx {
			res, rerr := replyInt64(replies[n], err)
			_, err := fencedReply(fs[i].Kind.String(), fs[i].Lease, keys[i], res, rerr)
			out[i] = s.lostOrCorrupt(ctx, err)
		}
	}
	return out
}

// scriptCall is one script run of a pipeline, for entry i of a batch.
type scriptCall struct {
	i      int          // the batch entry, or -1 for a merged call
	idx    []int        // a merged call's entries, in order
	multi  *multiScript // the multi-key script of a merged call, nil for a single-key call
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// pipeline runs calls in one pipeline (EVALSHA each) and sets their cmd.
// Calls the server answered with NOSCRIPT did not run: they are run again
// with Script.Run, which loads the script.
func (s *Store) pipeline(ctx context.Context, calls []scriptCall) []scriptCall {
	if len(calls) == 0 {
		return calls
	}
	pipe := s.client.Pipeline()
	for j := range calls {
		c := &calls[j]
		c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	for j := range calls {
		c := &calls[j]
		if err := c.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			c.cmd = c.script.Run(ctx, s.client, c.keys, c.args...)
		}
	}
	return calls
}

// finishOne makes one write of a batch with the store's own method.
func (s *Store) finishOne(ctx context.Context, f idem.Finish, retention time.Duration) error {
	switch f.Kind {
	case idem.FinishComplete:
		return s.Complete(ctx, f.Lease, f.Response, retention)
	case idem.FinishFail:
		return s.Fail(ctx, f.Lease, f.Response, retention)
	case idem.FinishRelease:
		return s.Release(ctx, f.Lease)
	}
	return fmt.Errorf("redisstore: finish batch: unknown finish kind %s", f.Kind)
}

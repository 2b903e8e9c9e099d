package consume

import (
	"context"
	"fmt"
	"time"

	"github.com/idembench/idembench/harness/multiproc"
	"github.com/idembench/idembench/idem"
)

// acquireBatch answers a worker's batch claim on st: with one call when st
// is an idem.BatchStore, else key by key.
func acquireBatch(ctx context.Context, st idem.Store, reqs []idem.AcquireRequest, ttl time.Duration) []wireAcquired {
	var res []idem.AcquireResult
	if bs, ok := st.(idem.BatchStore); ok {
		res = bs.AcquireBatch(ctx, reqs, ttl)
	} else {
		res = make([]idem.AcquireResult, len(reqs))
		for i, q := range reqs {
			res[i].Lease, res[i].Record, res[i].Err = st.Acquire(ctx, q.Key, q.Fingerprint, ttl)
		}
	}
	out := make([]wireAcquired, len(res))
	for i, a := range res {
		out[i] = wireAcquired{Lease: a.Lease, Rec: a.Record, Err: multiproc.ToWire(a.Err)}
	}
	return out
}

// finishBatch answers a worker's batch finish on st: with one call when st
// is an idem.BatchStore, else write by write.
func finishBatch(ctx context.Context, st idem.Store, fs []idem.Finish, retention time.Duration) []wireFinished {
	errs := make([]error, len(fs))
	if bs, ok := st.(idem.BatchStore); ok {
		errs = bs.FinishBatch(ctx, fs, retention)
	} else {
		for i, f := range fs {
			switch f.Kind {
			case idem.FinishComplete:
				errs[i] = st.Complete(ctx, f.Lease, f.Response, retention)
			case idem.FinishFail:
				errs[i] = st.Fail(ctx, f.Lease, f.Response, retention)
			case idem.FinishRelease:
				errs[i] = st.Release(ctx, f.Lease)
			default:
				errs[i] = fmt.Errorf("consume: unknown finish kind %d", f.Kind)
			}
		}
	}
	out := make([]wireFinished, len(errs))
	for i, err := range errs {
		out[i].Err = multiproc.ToWire(err)
	}
	return out
}

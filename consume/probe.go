package consume

import (
	"context"
	"errors"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// errProbeRan is the probe function's answer if it ever runs: a probe must
// find every message's outcome stored, never execute it.
var errProbeRan = errors.New("consume: liveness probe found no stored outcome")

// probe asks the store, after the run drained, for the outcome of every
// message (one Engine.Do per key with a function that only reports that it
// ran) and records the answers as probe calls, so that the checker checks
// liveness (I6): no key may be left in progress. A broker-only run has no
// store and no probes.
func (r *runner) probe(ctx context.Context) {
	if r.store == nil {
		return
	}
	e := idem.New(r.store, idem.WithLeaseTTL(r.cfg.LeaseTTL))
	defer e.Close()
	for i := range r.plan.msgs {
		m := &r.plan.msgs[i]
		body := m.body()
		fp := idem.NewFingerprint(body)
		op := history.Op{Kind: history.KindCall, Client: -1, Worker: -1, Key: m.Key, Request: int64(m.N), Probe: true,
			FP: history.FingerprintID(fp), Call: r.now()}
		res, err := e.Do(ctx, m.Key, fp, func(ctx context.Context) (idem.Response, error) {
			return idem.Response{}, errProbeRan // retryable: the key is released
		})
		op.Return = r.now()
		switch {
		case err == nil && res.Failed:
			op.Outcome, op.Resp = history.Failed, history.RespDigest(&res.Response)
		case err == nil:
			op.Outcome, op.Resp = history.Replayed, history.RespDigest(&res.Response)
		case errors.Is(err, idem.ErrInProgress):
			op.Outcome = history.InProgress
		case errors.Is(err, errProbeRan):
			op.Outcome, op.Err = history.Released, err.Error()
		default:
			op.Outcome, op.Return, op.Err = history.Unknown, history.NoReturn, err.Error()
		}
		r.rec.Record(op)
	}
}

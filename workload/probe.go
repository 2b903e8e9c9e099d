package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

// probeWorkers bounds the concurrency of the liveness probe.
const probeWorkers = 32

// advancer is a manual clock (memstore.ManualClock).
type advancer interface{ Advance(time.Duration) }

// Probe waits one lease TTL on the store's clock, then calls every key
// (see the package doc) with the key's original fingerprint, and records
// the calls with Probe set. Probes neither fail nor sleep in the business
// function; a call is made again only when the store failed it (probeKey).
//
// In a run with completers the wait is longer by Completer.OlderThan (on
// the wall clock); then the probe waits for every completer to make a
// whole pass (at most MaxCompleterPassWait), stops them, and reads each key
// before it calls it (probeRead).
func (t engineTarget) Probe(ctx context.Context, pk []ProbeKey) error {
	d, cs := t.d, t.d.cs
	keys := make([]string, len(pk))
	for i := range pk {
		keys[i] = pk[i].Key
	}
	ttl := d.cfg.Engine.LeaseTTL
	extra := d.cfg.Completer.probeWait()
	if a, ok := d.cfg.StoreClock.(advancer); ok {
		a.Advance(ttl + time.Millisecond)
	} else {
		// A little more than the TTL, so that a lease renewed at the very
		// end of the drain has surely expired.
		extra += ttl + ttl/10 + 5*time.Millisecond
	}
	if extra > 0 {
		t := time.NewTimer(extra)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	cs.awaitPasses(ctx)
	cs.stop()
	reads := cs != nil
	timeout := max(2*ttl, time.Second) + d.cfg.Engine.ConflictWait
	base := d.cfg.ClientBase + d.cfg.Clients + 1
	return FanOut(ctx, len(keys), probeWorkers, func(w, i int) {
		client := base + w
		if reads && !d.probeRead(ctx, client, keys[i], timeout) {
			return // answered or stuck: no call
		}
		d.probeKey(ctx, client, int64(i), keys[i], timeout)
	})
}

// probeAttempts bounds the calls of one key's probe: a call whose answer is
// unknown because the store failed it is made again, as a client would,
// while the probe's time lasts. A pooled connection that died with a
// restarted or failed-over server fails its next call, once, and a pool
// can hold dozens of them (the harness's PostgreSQL pools hold 32): all of
// a few keys' first calls can meet one. A store that stays down fails
// every call at once; probeRetryPause keeps that from spinning.
const (
	probeAttempts   = 100
	probeRetryPause = 5 * time.Millisecond
)

// probeKey calls key until it gets an answer other than unknown, at most
// probeAttempts times within timeout. The last call is the liveness probe
// (Probe set: unknown there means stuck); the earlier ones are recorded as
// ordinary calls, with their own execution ids, since they may have run the
// function.
func (d *driver) probeKey(ctx context.Context, client int, seq int64, key string, timeout time.Duration) {
	fp, fpID := fingerprint(key, false)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for n := 1; ; n++ {
		x := &execution{client: client, key: key, seq: seq<<2 | int64(n), probe: true, attempt: n}
		op := history.Op{
			Kind:    history.KindCall,
			Client:  client,
			Worker:  client,
			Key:     key,
			Attempt: n,
			FP:      fpID,
			Probe:   true,
		}
		op.Call = d.now()
		res, err := d.do(pctx, x, fp, d.business(x))
		op.Return = d.now()
		classify(&op, res, err, x)
		again := op.Outcome == history.Unknown && errors.Is(err, idem.ErrBackend) &&
			n < probeAttempts && pctx.Err() == nil
		if again {
			op.Probe = false
		}
		d.rec.Record(op)
		if !again {
			return
		}
		t := time.NewTimer(probeRetryPause)
		select {
		case <-pctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// probeRead reads key's record, without calling the engine, and records
// what it found as a probe call: a stored answer as replayed or failed
// (mismatch when stored with another fingerprint), an in-progress record
// as in_progress (stuck: nobody finished it), an error as unknown, and an
// absent record as released. It reports whether the key is absent, in
// which case the caller probes it with a call too: a client that comes
// back at last runs the request anew, and if its effect had happened
// already (a key released after its effect) that call applies it again,
// which I1 sees.
func (d *driver) probeRead(ctx context.Context, client int, key string, timeout time.Duration) (absent bool) {
	fp, fpID := fingerprint(key, false)
	op := history.Op{
		Kind:    history.KindCall,
		Client:  client,
		Worker:  client,
		Key:     key,
		Attempt: 1,
		FP:      fpID,
		Probe:   true,
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stored, err := idem.StorageKey(key)
	op.Call = d.now()
	var rec *idem.Record
	if err == nil {
		rec, err = d.cfg.Store.Get(pctx, stored)
	}
	op.Return = d.now()
	switch {
	case errors.Is(err, idem.ErrNotFound):
		op.Outcome = history.Released
		op.Err = "probe read: no record (released, or never stored)"
		absent = true
	case err != nil:
		op.Outcome, op.Return, op.Err = history.Unknown, history.NoReturn, "probe read: "+err.Error()
	case rec.Status == idem.StatusInProgress:
		op.Outcome = history.InProgress
		op.Err = fmt.Sprintf("probe read: still in progress under token %d, lease expired at %s", rec.Token, rec.LeaseExpiry.Format(time.RFC3339Nano))
	case rec.Fingerprint != fp:
		op.Outcome = history.Mismatch
	case (rec.Status == idem.StatusCompleted || rec.Status == idem.StatusFailed) && rec.Response != nil:
		op.Outcome = history.Replayed
		if rec.Status == idem.StatusFailed {
			op.Outcome = history.Failed
		}
		op.Resp = respID(rec.Response)
		op.Exec = execOf(rec.Response)
	default:
		op.Outcome, op.Err = history.Error, fmt.Sprintf("probe read: record with status %v", rec.Status)
	}
	d.rec.Record(op)
	return absent
}

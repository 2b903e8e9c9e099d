package redisstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// TestBatchClaimWritesAcquiresRecord: the merged batch script claims an
// absent key on its own path (claim() without the body's reads); the
// record it writes must be the one Acquire writes, field for field, apart
// from the values of the claim itself, and its lease must decode the same.
func TestBatchClaimWritesAcquiresRecord(t *testing.T) {
	c := newClient(t)
	st := newStore(t, c, Options{})
	ctx := ctxT(t)
	fp := idem.FingerprintString("same")
	one := mustAcquire(t, st, "one", fp, time.Minute)
	res := st.AcquireBatch(ctx, []idem.AcquireRequest{{Key: "b1", Fingerprint: fp}, {Key: "b2", Fingerprint: fp}}, time.Minute)
	for i, r := range res {
		if r.Err != nil || r.Lease == nil || r.Record != nil {
			t.Fatalf("entry %d: lease %+v record %+v err %v", i, r.Lease, r.Record, r.Err)
		}
		l := r.Lease
		if l.Key != fmt.Sprintf("b%d", i+1) || l.Fingerprint != fp || l.PrevToken != 0 || l.Token == 0 {
			t.Errorf("entry %d: lease %+v, Acquire's was %+v", i, l, one)
		}
		if d := l.Expiry.Sub(one.Expiry); d < 0 || d > 5*time.Second {
			t.Errorf("entry %d: lease expiry %v, Acquire's %v", i, l.Expiry, one.Expiry)
		}
	}
	want, err := c.HGetAll(ctx, keysFor(st.opts.Prefix, "one").record).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		rec := keysFor(st.opts.Prefix, r.Lease.Key).record
		got, err := c.HGetAll(ctx, rec).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("entry %d: fields %v, Acquire wrote %v", i, got, want)
		}
		for f, v := range want {
			switch f {
			case fieldToken:
				v = fmt.Sprint(uint64(r.Lease.Token))
			case fieldLease:
				v = fmt.Sprint(r.Lease.Expiry.UnixMilli())
			case fieldAcqID:
				v = got[f] // a call id: only present
			}
			if got[f] != v {
				t.Errorf("entry %d: field %s = %q, want %q", i, f, got[f], v)
			}
		}
		ttl, err := c.PTTL(ctx, rec).Result()
		if err != nil || ttl < time.Minute || ttl > time.Minute+st.opts.TakeoverGrace+time.Second {
			t.Errorf("entry %d: record TTL %v (%v), want the lease plus the grace %v", i, ttl, err, st.opts.TakeoverGrace)
		}
	}
	if res[0].Lease.Token == res[1].Lease.Token {
		t.Errorf("two keys of one batch got token %d", res[0].Lease.Token)
	}
}

// TestBatchRepeatedKeyIsNoRetry: a batch's writes share one call id, which
// a script takes as "this very call wrote the record". A key given twice in
// one call (outside the contract) must still not get the first entry's
// lease again, nor its completion be reported twice.
func TestBatchRepeatedKeyIsNoRetry(t *testing.T) {
	st := newStore(t, newClient(t), Options{})
	ctx := ctxT(t)
	fp := idem.FingerprintString("x")
	res := st.AcquireBatch(ctx, []idem.AcquireRequest{{Key: "k", Fingerprint: fp}, {Key: "other", Fingerprint: fp}, {Key: "k", Fingerprint: fp}}, time.Minute)
	if res[0].Lease == nil || res[1].Lease == nil {
		t.Fatalf("first and second entries: %+v %+v", res[0], res[1])
	}
	if res[2].Err != nil || res[2].Lease != nil || res[2].Record == nil || res[2].Record.Status != idem.StatusInProgress {
		t.Fatalf("repeated key: lease %+v record %+v err %v, want the in-progress record", res[2].Lease, res[2].Record, res[2].Err)
	}
	l := res[0].Lease
	errs := st.FinishBatch(ctx, []idem.Finish{
		{Kind: idem.FinishComplete, Lease: l, Response: resp("a")},
		{Kind: idem.FinishComplete, Lease: l, Response: resp("a")},
	}, time.Minute)
	if errs[0] != nil || !errors.Is(errs[1], idem.ErrLeaseLost) {
		t.Fatalf("completing one lease twice in a batch: %v, %v; want nil, ErrLeaseLost", errs[0], errs[1])
	}
}

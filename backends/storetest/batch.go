package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idembench/idembench/idem"
)

// RunBatch runs the cases of the optional idem.BatchStore capability
// against cfg: a mixed batch claim (new, completed, live, expired, expired
// with another fingerprint) answers per key as Acquire does; a mixed batch
// finish (complete, fail, release, stale token) is fenced per key; and
// Engine.DoBatch gives, per item, exactly what Do called item after item
// gives, duplicates within the batch included. A store that does not
// implement idem.BatchStore fails.
func RunBatch(t *testing.T, cfg Config) {
	t.Helper()
	s := newSuite(cfg)
	for _, c := range []testCase{
		{"BatchAcquireMixed", batchAcquireMixed},
		{"BatchFinishFenced", batchFinishFenced},
		{"DoBatchEqualsDo", doBatchEqualsDo},
		{"CoalescedDoOncePerKey", coalescedOncePerKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := cfg.New(t)
			if _, ok := st.(idem.BatchStore); !ok {
				t.Fatalf("%T does not implement idem.BatchStore", st)
			}
			c.run(t, s, st, uniqueKey(t))
		})
	}
}

func batchAcquireMixed(t *testing.T, s *suite, st idem.Store, key string) {
	bs := st.(idem.BatchStore)
	k := func(n string) string { return key + "." + n }
	done := MustAcquire(t, st, k("done"), fp("a"), long)
	if err := st.Complete(bg(), done, sampleResponse("done"), long); err != nil {
		t.Fatal(err)
	}
	live := MustAcquire(t, st, k("live"), fp("a"), long)
	expired := MustAcquire(t, st, k("expired"), fp("a"), s.ttl)
	other := MustAcquire(t, st, k("other"), fp("a"), s.ttl)
	s.wait(s.pastTTL())

	reqs := []idem.AcquireRequest{
		{Key: k("new"), Fingerprint: fp("a")},
		{Key: k("done"), Fingerprint: fp("a")},
		{Key: k("live"), Fingerprint: fp("a")},
		{Key: k("expired"), Fingerprint: fp("a")},
		{Key: k("other"), Fingerprint: fp("b")},
	}
	res := bs.AcquireBatch(bg(), reqs, long)
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(res), len(reqs))
	}
	for i, r := range res {
		if r.Err != nil || (r.Lease == nil) == (r.Record == nil) {
			t.Fatalf("%s: lease %v, record %v, err %v: want exactly one of lease and record", reqs[i].Key, r.Lease, r.Record, r.Err)
		}
	}
	if l := res[0].Lease; l == nil || l.PrevToken != 0 || l.Key != k("new") {
		t.Fatalf("new key: %+v, want a fresh lease", res[0])
	}
	if r := res[1].Record; r == nil || r.Status != idem.StatusCompleted || r.Token != done.Token {
		t.Fatalf("completed key: %+v, want its record", res[1])
	}
	if r := res[2].Record; r == nil || r.Status != idem.StatusInProgress || r.Token != live.Token {
		t.Fatalf("live key: %+v, want its in-progress record", res[2])
	}
	if l := res[3].Lease; l == nil || l.PrevToken != expired.Token || l.Token <= expired.Token {
		t.Fatalf("expired key: %+v, want a take-over of token %d", res[3], expired.Token)
	}
	if r := res[4].Record; r == nil || r.Token != other.Token {
		t.Fatalf("expired key with another fingerprint: %+v, want its record unchanged", res[4])
	}
}

func batchFinishFenced(t *testing.T, s *suite, st idem.Store, key string) {
	bs := st.(idem.BatchStore)
	k := func(n string) string { return key + "." + n }
	c := MustAcquire(t, st, k("c"), fp("a"), long)
	f := MustAcquire(t, st, k("f"), fp("a"), long)
	r := MustAcquire(t, st, k("r"), fp("a"), long)
	old := MustAcquire(t, st, k("stale"), fp("a"), s.ttl)
	s.wait(s.pastTTL())
	if l, _, err := st.Acquire(bg(), k("stale"), fp("a"), long); err != nil || l == nil {
		t.Fatalf("take-over of the stale key: %v, %v", l, err)
	}
	errs := bs.FinishBatch(bg(), []idem.Finish{
		{Kind: idem.FinishComplete, Lease: c, Response: sampleResponse("c")},
		{Kind: idem.FinishFail, Lease: f, Response: sampleResponse("f")},
		{Kind: idem.FinishRelease, Lease: r},
		{Kind: idem.FinishComplete, Lease: old, Response: sampleResponse("stale")},
	}, long)
	if len(errs) != 4 {
		t.Fatalf("%d errors for 4 writes", len(errs))
	}
	for i, want := range []error{nil, nil, nil, idem.ErrLeaseLost} {
		if !errors.Is(errs[i], want) && !(want == nil && errs[i] == nil) {
			t.Fatalf("write %d: %v, want %v", i, errs[i], want)
		}
	}
	if rec := mustGet(t, st, k("c")); rec.Status != idem.StatusCompleted || !rec.Response.Equal(ptr(sampleResponse("c"))) {
		t.Fatalf("completed record %+v", rec)
	}
	if rec := mustGet(t, st, k("f")); rec.Status != idem.StatusFailed {
		t.Fatalf("failed record %+v", rec)
	}
	if _, err := st.Get(bg(), k("r")); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("released record: %v, want ErrNotFound", err)
	}
	if rec := mustGet(t, st, k("stale")); rec.Status != idem.StatusInProgress {
		t.Fatalf("stale write changed the successor's record: %+v", rec)
	}
}

func ptr(r idem.Response) *idem.Response { return &r }

// doBatchEqualsDo runs one script of requests twice on fresh keys: once
// with DoBatch, once with Do item after item, and compares per item.
func doBatchEqualsDo(t *testing.T, s *suite, st idem.Store, key string) {
	type step struct {
		key, body string
		fnErr     error
	}
	script := []step{
		{"a", "1", nil}, {"b", "1", nil}, {"a", "1", nil}, // duplicate within the batch
		{"c", "1", idem.Permanent(errors.New("declined"))}, {"c", "1", nil},
		{"d", "1", errors.New("try again")}, {"d", "1", nil}, // released, then run again
		{"b", "2", nil}, // same key, another request
		{"bad key", "1", nil},
	}
	run := func(prefix string, batch bool) []string {
		e := idem.New(st, idem.WithLeaseTTL(long))
		defer e.Close()
		var items []idem.BatchItem
		for i, sp := range script {
			sp, i := sp, i
			items = append(items, idem.BatchItem{
				Key:         prefix + sp.key,
				Fingerprint: fp(sp.body),
				Fn: func(context.Context) (idem.Response, error) {
					return idem.Response{Status: 200, Body: []byte(fmt.Sprint("run ", i))}, sp.fnErr
				},
			})
		}
		var out []string
		describe := func(r idem.Result, err error) string {
			return fmt.Sprintf("replayed=%v failed=%v status=%d body=%q err=%v",
				r.Replayed, r.Failed, r.Response.Status, r.Response.Body, errClass(err))
		}
		if batch {
			for _, r := range e.DoBatch(bg(), items) {
				out = append(out, describe(r.Result, r.Err))
			}
			return out
		}
		for _, it := range items {
			r, err := e.Do(bg(), it.Key, it.Fingerprint, it.Fn)
			out = append(out, describe(r, err))
		}
		return out
	}
	got, want := run(key+".batch.", true), run(key+".do.", false)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d (%s): DoBatch %s, Do %s", i, script[i].key, got[i], want[i])
		}
	}
}

// coalescedOncePerKey sends 32 concurrent callers, 4 per key, through an
// engine WithCoalescing: every key runs once, every caller gets that run's
// response or ErrInProgress, and every key ends completed.
func coalescedOncePerKey(t *testing.T, s *suite, st idem.Store, key string) {
	e := idem.New(st, idem.WithLeaseTTL(long), idem.WithCoalescing(idem.CoalesceOptions{MaxInFlight: 1, MaxBatch: 8}))
	defer e.Close()
	const callers, perKey = 32, 4
	var runs [callers / perKey]atomic.Int32
	bodies := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			k := c % (callers / perKey)
			r, err := e.Do(bg(), fmt.Sprintf("%s.%d", key, k), fp("x"), func(context.Context) (idem.Response, error) {
				n := runs[k].Add(1)
				return idem.Response{Status: 200, Body: []byte(fmt.Sprint(k, "/", n))}, nil
			})
			bodies[c], errs[c] = string(r.Response.Body), err
		})
	}
	wg.Wait()
	for k := range runs {
		if n := runs[k].Load(); n != 1 {
			t.Errorf("key %d ran %d times, want 1", k, n)
		}
		if rec := mustGet(t, st, fmt.Sprintf("%s.%d", key, k)); rec.Status != idem.StatusCompleted || string(rec.Response.Body) != fmt.Sprint(k, "/1") {
			t.Errorf("key %d stored %+v, want completed with its one run", k, rec)
		}
	}
	for c, err := range errs {
		if err != nil && !errors.Is(err, idem.ErrInProgress) {
			t.Errorf("caller %d: %v", c, err)
		}
		if err == nil && bodies[c] != fmt.Sprint(c%(callers/perKey), "/1") {
			t.Errorf("caller %d got %q", c, bodies[c])
		}
	}
}

// errClass names the sentinel an error wraps, for comparing outcomes.
func errClass(err error) string {
	for _, s := range []error{idem.ErrInvalidKey, idem.ErrFingerprintMismatch, idem.ErrInProgress, idem.ErrLeaseLost} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return "nil"
}

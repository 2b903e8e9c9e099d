package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

func acquireAbsent(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	if l.Token == 0 || l.PrevToken != 0 || l.Key != key || l.Fingerprint != fp("a") {
		t.Fatalf("lease = %+v, want non-zero token, no previous token, key and fingerprint set", l)
	}
	if l.Expiry.IsZero() {
		t.Fatalf("lease has no expiry")
	}
	rec := mustGet(t, st, key)
	if rec.Status != idem.StatusInProgress || rec.Token != l.Token || rec.Response != nil {
		t.Fatalf("record = %+v, want in progress with token %d and no response", rec, l.Token)
	}
}

func acquireLive(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	for _, f := range []string{"a", "b"} {
		rec := MustRecord(t, st, key, fp(f), long)
		if rec.Status != idem.StatusInProgress || rec.Token != l.Token || rec.Fingerprint != fp("a") {
			t.Fatalf("Acquire with fingerprint %q: record = %+v, want in progress with the holder's token %d and fingerprint", f, rec, l.Token)
		}
	}
}

func completeReplay(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	want := sampleResponse("c")
	if err := st.Complete(bg(), l, want, long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	rec := MustRecord(t, st, key, fp("a"), long)
	if rec.Status != idem.StatusCompleted || rec.Token != l.Token {
		t.Fatalf("record = %+v, want completed by token %d", rec, l.Token)
	}
	sameResponse(t, rec.Response, want)
}

func failReplay(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	want := idem.Response{Status: 402, Body: []byte("card declined")}
	if err := st.Fail(bg(), l, want, long); err != nil {
		t.Fatalf("Fail: %v", err)
	}
	rec := MustRecord(t, st, key, fp("a"), long)
	if rec.Status != idem.StatusFailed {
		t.Fatalf("status = %v, want failed", rec.Status)
	}
	sameResponse(t, rec.Response, want)
}

func releaseAbsent(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	if err := st.Release(bg(), l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantFreed(t, st, key, l, "Release")
}

// wantFreed checks that key has no record after what freed l's claim, and
// that the next Acquire gets a fresh lease: a token above l's and no
// previous token.
func wantFreed(t testing.TB, st idem.Store, key string, l *idem.Lease, what string) {
	t.Helper()
	if _, err := st.Get(bg(), key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get after %s: err = %v, want ErrNotFound", what, err)
	}
	l2 := MustAcquire(t, st, key, fp("a"), long)
	if l2.Token <= l.Token || l2.PrevToken != 0 {
		t.Fatalf("lease after %s = %+v, want a token above %d and no previous token", what, l2, l.Token)
	}
}

func raceOneWinner(t testing.TB, s *suite, st idem.Store, key string) {
	const n = 32
	leases, records := RaceAcquire(t, st, key, n)
	if len(leases) != 1 || len(records) != n-1 {
		t.Fatalf("%d racing Acquires gave %d leases and %d records, want 1 and %d", n, len(leases), len(records), n-1)
	}
}

// raceOneTakeOver is raceOneWinner on an expired lease: the take-over must be
// as atomic as the first claim. A store that inserts atomically but takes
// over in two steps (read the expired record, then overwrite it) passes
// every other case and lets concurrent retries of a crashed request all run.
func raceOneTakeOver(t testing.TB, s *suite, st idem.Store, key string) {
	const n = 32
	old := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.pastTTL())
	leases, records := RaceAcquire(t, st, key, n)
	if len(leases) != 1 || len(records) != n-1 {
		t.Fatalf("%d racing take-overs gave %d leases and %d records, want 1 and %d", n, len(leases), len(records), n-1)
	}
	l := leases[0]
	if l.Token <= old.Token || l.PrevToken != old.Token {
		t.Fatalf("take-over lease = %+v, want token > %d and PrevToken %d", l, old.Token, old.Token)
	}
	for _, rec := range records {
		if rec.Status != idem.StatusInProgress || rec.Token != l.Token {
			t.Fatalf("losing Acquire saw record %+v, want in progress with the winner's token %d", rec, l.Token)
		}
	}
	if rec := mustGet(t, st, key); rec.Token != l.Token {
		t.Fatalf("stored token %d, want the winner's %d", rec.Token, l.Token)
	}
}

// RaceAcquire starts n Acquires of key at once, all with the fingerprint
// of "a" and a lease of an hour, and returns the leases and the records
// they got. An error, or a call that got neither, fails t.
func RaceAcquire(t testing.TB, st idem.Store, key string, n int) (leases []*idem.Lease, records []*idem.Record) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			l, rec, err := st.Acquire(bg(), key, fp("a"), long)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("Acquire: %v", err)
			case l != nil:
				leases = append(leases, l)
			case rec != nil:
				records = append(records, rec)
			default:
				t.Errorf("Acquire: neither a lease nor a record")
			}
		}()
	}
	close(start)
	wg.Wait()
	return leases, records
}

func takeOverAfterExpiry(t testing.TB, s *suite, st idem.Store, key string) {
	l1 := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.ttl / 4)
	if rec := MustRecord(t, st, key, fp("a"), s.ttl); rec.Token != l1.Token {
		t.Fatalf("before expiry: record token %d, want %d", rec.Token, l1.Token)
	}
	s.wait(s.pastTTL())
	l2 := MustAcquire(t, st, key, fp("a"), long)
	if l2.Token <= l1.Token || l2.PrevToken != l1.Token {
		t.Fatalf("take-over lease = %+v, want token > %d and PrevToken %d", l2, l1.Token, l1.Token)
	}
}

// readsDoNotExtend: an Acquire that finds the lease live answers with the
// record and leaves the lease as it is, so that a holder that died is
// taken over one TTL after its last grant or renewal, however often its
// clients retry meanwhile (a store that refreshes the lease on each read
// keeps the key blocked while they do).
func readsDoNotExtend(t testing.TB, s *suite, st idem.Store, key string) {
	l1 := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.ttl / 2)
	if rec := MustRecord(t, st, key, fp("a"), s.ttl); rec.Token != l1.Token {
		t.Fatalf("before expiry: record token %d, want %d", rec.Token, l1.Token)
	}
	s.wait(s.ttl/2 + s.ttl/4) // past the grant's expiry, before the read's
	l2, rec := acquire(t, st, key, fp("a"), long)
	if l2 == nil {
		t.Fatalf("%s after the grant, %s after a retry read the live lease: record %+v, want a take-over (the read extended the lease)",
			s.ttl+s.ttl/4, s.ttl/2+s.ttl/4, rec)
	}
	if l2.PrevToken != l1.Token {
		t.Fatalf("take-over lease = %+v, want PrevToken %d", l2, l1.Token)
	}
}

func takeOverOtherFingerprint(t testing.TB, s *suite, st idem.Store, key string) {
	l1 := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.pastTTL())
	rec := MustRecord(t, st, key, fp("b"), long)
	if rec.Token != l1.Token || rec.Fingerprint != fp("a") {
		t.Fatalf("record = %+v, want the first request's (token %d)", rec, l1.Token)
	}
}

func staleTokenFenced(t testing.TB, s *suite, st idem.Store, key string) {
	old := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.pastTTL())
	cur := MustAcquire(t, st, key, fp("a"), long)
	checks := []struct {
		name string
		call func() error
	}{
		{"Heartbeat", func() error { return st.Heartbeat(bg(), old, long) }},
		{"Complete", func() error { return st.Complete(bg(), old, sampleResponse("old"), long) }},
		{"Fail", func() error { return st.Fail(bg(), old, sampleResponse("old"), long) }},
		{"Release", func() error { return st.Release(bg(), old) }},
	}
	for _, c := range checks {
		if err := c.call(); !errors.Is(err, idem.ErrLeaseLost) {
			t.Errorf("stale %s: err = %v, want ErrLeaseLost", c.name, err)
		}
		rec := mustGet(t, st, key)
		if rec.Status != idem.StatusInProgress || rec.Token != cur.Token || rec.Response != nil {
			t.Fatalf("after stale %s: record = %+v, want unchanged in progress with token %d", c.name, rec, cur.Token)
		}
	}
}

func fencedAfterCompletion(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	want := sampleResponse("first")
	if err := st.Complete(bg(), l, want, long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := st.Complete(bg(), l, sampleResponse("second"), long); !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("second Complete: err = %v, want ErrLeaseLost", err)
	}
	if err := st.Fail(bg(), l, sampleResponse("second"), long); !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("Fail after Complete: err = %v, want ErrLeaseLost", err)
	}
	if err := st.Release(bg(), l); !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("Release after Complete: err = %v, want ErrLeaseLost", err)
	}
	if err := st.Heartbeat(bg(), l, long); !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("Heartbeat after Complete: err = %v, want ErrLeaseLost", err)
	}
	rec := mustGet(t, st, key)
	if rec.Status != idem.StatusCompleted {
		t.Fatalf("status = %v, want completed", rec.Status)
	}
	sameResponse(t, rec.Response, want)
}

func expiredStillOwned(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), s.ttl)
	s.wait(s.pastTTL())
	// A heartbeat after expiry renews the lease: nobody took it over.
	if err := st.Heartbeat(bg(), l, long); err != nil {
		t.Fatalf("Heartbeat after expiry without take-over: %v", err)
	}
	if rec := MustRecord(t, st, key, fp("a"), long); rec.Token != l.Token {
		t.Fatalf("after renewal: record token %d, want %d (lease renewed, no take-over)", rec.Token, l.Token)
	}
	s.wait(s.ttl / 2)
	if err := st.Complete(bg(), l, sampleResponse("late"), long); err != nil {
		t.Fatalf("Complete after expiry without take-over: %v", err)
	}
	if rec := mustGet(t, st, key); rec.Status != idem.StatusCompleted || rec.Token != l.Token {
		t.Fatalf("record = %+v, want completed by token %d", rec, l.Token)
	}
}

func tokensIncrease(t testing.TB, s *suite, st idem.Store, key string) {
	var last idem.Token
	next := func(step string) *idem.Lease {
		l := MustAcquire(t, st, key, fp("a"), long)
		if l.Token <= last {
			t.Fatalf("%s: token %d, want > %d", step, l.Token, last)
		}
		last = l.Token
		return l
	}
	l := next("first")
	if err := st.Release(bg(), l); err != nil {
		t.Fatal(err)
	}
	l = next("after Release")
	if err := st.Complete(bg(), l, sampleResponse("x"), s.ttl); err != nil {
		t.Fatal(err)
	}
	s.wait(s.pastTTL())
	l = next("after retention expiry")
	if err := st.Fail(bg(), l, sampleResponse("y"), s.ttl); err != nil {
		t.Fatal(err)
	}
	s.wait(s.pastTTL())
	next("after failure expiry")
}

func heartbeatExtends(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), s.ttl)
	first := l.Expiry
	for range 3 {
		s.wait(s.ttl * 6 / 10)
		if err := st.Heartbeat(bg(), l, s.ttl); err != nil {
			t.Fatalf("Heartbeat: %v", err)
		}
	}
	if !l.Expiry.After(first) {
		t.Fatalf("Heartbeat did not advance Lease.Expiry (%v, was %v)", l.Expiry, first)
	}
	// 1.8 TTLs after Acquire, the lease is still live thanks to the heartbeats.
	if rec := MustRecord(t, st, key, fp("a"), long); rec.Token != l.Token {
		t.Fatalf("record token %d, want %d: heartbeat did not extend the lease", rec.Token, l.Token)
	}
}

func fingerprintKept(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("req-1"), long)
	if rec := mustGet(t, st, key); rec.Fingerprint != fp("req-1") {
		t.Fatalf("in-progress fingerprint %s, want %s", rec.Fingerprint, fp("req-1"))
	}
	if err := st.Complete(bg(), l, sampleResponse("x"), long); err != nil {
		t.Fatal(err)
	}
	rec := MustRecord(t, st, key, fp("req-2"), long)
	if rec.Fingerprint != fp("req-1") {
		t.Fatalf("completed fingerprint %s, want %s", rec.Fingerprint, fp("req-1"))
	}
}

func retentionExpiry(t testing.TB, s *suite, st idem.Store, key string) {
	l := MustAcquire(t, st, key, fp("a"), long)
	if err := st.Complete(bg(), l, sampleResponse("x"), s.ttl); err != nil {
		t.Fatal(err)
	}
	s.wait(s.ttl / 4)
	if rec := mustGet(t, st, key); rec.Status != idem.StatusCompleted {
		t.Fatalf("within retention: status %v, want completed", rec.Status)
	}
	s.wait(s.pastTTL())
	if _, err := st.Get(bg(), key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("after retention: err = %v, want ErrNotFound", err)
	}
	if l2 := MustAcquire(t, st, key, fp("other"), long); l2.PrevToken != 0 {
		t.Fatalf("after retention: PrevToken %d, want 0", l2.PrevToken)
	}
}

func responseRoundTrip(t testing.TB, s *suite, st idem.Store, key string) {
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	resps := []idem.Response{
		{Status: 200},
		{Status: 204, Header: map[string][]string{"Empty": {""}}},
		{Status: 500, Body: big},
		sampleResponse("rt"),
	}
	for i, want := range resps {
		k := key + "." + string(rune('a'+i))
		l := MustAcquire(t, st, k, fp("a"), long)
		if err := st.Complete(bg(), l, want, long); err != nil {
			t.Fatalf("Complete %d: %v", i, err)
		}
		sameResponse(t, mustGet(t, st, k).Response, want)
	}
}

func keysIndependent(t testing.TB, s *suite, st idem.Store, key string) {
	maxKey := key + strings.Repeat("~", idem.MaxKeyLen-len(key))
	keys := []string{key + ".A", key + ".a", key + ".a:b", maxKey, key + `.{x}"'\`}
	// Tokens are ordered per key only (see idem.Token), so two keys may
	// share one; what must hold is that each key keeps its own record.
	for _, k := range keys {
		l := MustAcquire(t, st, k, fp("a"), long)
		if err := st.Complete(bg(), l, idem.Response{Status: 200, Body: []byte(k)}, long); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		rec := mustGet(t, st, k)
		if rec.Key != k || string(rec.Response.Body) != k {
			t.Fatalf("Get(%q) = key %q body %q", k, rec.Key, rec.Response.Body)
		}
	}
}

func corruptRecord(t testing.TB, s *suite, st idem.Store, key string) {
	if s.cfg.Corrupt == nil {
		t.Skip("Config.Corrupt not set")
	}
	l := MustAcquire(t, st, key, fp("a"), long)
	if err := st.Complete(bg(), l, sampleResponse("x"), long); err != nil {
		t.Fatal(err)
	}
	s.cfg.Corrupt(realT(t), st, key)
	if _, err := st.Get(bg(), key); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("Get of corrupt record: err = %v, want ErrCorruptRecord", err)
	}
	if l, _, err := st.Acquire(bg(), key, fp("a"), long); !errors.Is(err, idem.ErrCorruptRecord) || l != nil {
		t.Errorf("Acquire of corrupt record: lease %v err = %v, want ErrCorruptRecord and no lease", l, err)
	}
}

func cancelledContext(t testing.TB, s *suite, st idem.Store, key string) {
	ctx, cancel := context.WithCancel(bg())
	cancel()
	l, rec, err := st.Acquire(ctx, key, fp("a"), long)
	if !errors.Is(err, context.Canceled) || l != nil || rec != nil {
		t.Fatalf("Acquire with cancelled ctx = %v, %v, %v; want context.Canceled only", l, rec, err)
	}
	if _, err := st.Get(bg(), key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get after cancelled Acquire: err = %v, want ErrNotFound", err)
	}
	held := MustAcquire(t, st, key, fp("a"), long)
	if err := st.Complete(ctx, held, sampleResponse("x"), long); !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete with cancelled ctx: err = %v, want context.Canceled", err)
	}
	if rec := mustGet(t, st, key); rec.Status != idem.StatusInProgress {
		t.Fatalf("status after cancelled Complete = %v, want in progress", rec.Status)
	}
}

func waiterWakes(t testing.TB, s *suite, st idem.Store, key string) {
	w, ok := st.(idem.Waiter)
	if !ok {
		t.Skip("store is not an idem.Waiter")
	}
	l := MustAcquire(t, st, key, fp("a"), long)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		done <- w.WaitChange(ctx, key)
	}()
	time.Sleep(50 * time.Millisecond)
	if err := st.Complete(bg(), l, sampleResponse("x"), long); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitChange: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitChange did not return within 5s of Complete")
	}
	// A wait on a key that is not in progress returns at once.
	ctx, cancel := context.WithTimeout(bg(), 2*time.Second)
	defer cancel()
	if err := w.WaitChange(ctx, key); err != nil {
		t.Fatalf("WaitChange on completed key: %v", err)
	}
}

func sweeperRemoves(t testing.TB, s *suite, st idem.Store, key string) {
	sw, ok := st.(idem.Sweeper)
	if !ok {
		t.Skip("store is not an idem.Sweeper")
	}
	short := MustAcquire(t, st, key+".short", fp("a"), long)
	kept := MustAcquire(t, st, key+".kept", fp("a"), long)
	if err := st.Complete(bg(), short, sampleResponse("s"), s.ttl); err != nil {
		t.Fatal(err)
	}
	if err := st.Complete(bg(), kept, sampleResponse("k"), long); err != nil {
		t.Fatal(err)
	}
	s.wait(s.pastTTL())
	if _, err := sw.Sweep(bg()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if _, err := st.Get(bg(), key+".short"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("expired record after Sweep: err = %v, want ErrNotFound", err)
	}
	mustGet(t, st, key+".kept")
}

package redisstore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

var (
	fpA = idem.FingerprintString("request", "A")
	fpB = idem.FingerprintString("request", "B")
)

const (
	longTTL   = 30 * time.Second
	shortTTL  = 100 * time.Millisecond
	retention = time.Hour
)

// storeSuite runs the store's own transition tests against stores made by
// mk; TestStore runs it on a single node and TestCluster on Redis Cluster.
func storeSuite(t *testing.T, mk func(t *testing.T) *Store) {
	t.Run("AcquireNew", func(t *testing.T) {
		s := mk(t)
		before := time.Now()
		l := mustAcquire(t, s, "k", fpA, longTTL)
		if l.Token == 0 || l.PrevToken != 0 || l.Key != "k" || l.Fingerprint != fpA {
			t.Fatalf("lease %+v", l)
		}
		// Server and test share a host clock; allow generous slack.
		if d := l.Expiry.Sub(before.Add(longTTL)); d < -2*time.Second || d > 2*time.Second {
			t.Fatalf("lease expiry %v is %v off now+ttl", l.Expiry, d)
		}
		rec, err := s.Get(ctxT(t), "k")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != idem.StatusInProgress || rec.Token != l.Token || !rec.LeaseExpiry.Equal(l.Expiry) ||
			rec.Fingerprint != fpA || rec.Response != nil {
			t.Fatalf("record %+v, lease %+v", rec, l)
		}
		if want := l.Expiry.Add(s.opts.TakeoverGrace); !near(rec.ExpiresAt, want) {
			t.Fatalf("ExpiresAt %v, want lease expiry + grace %v", rec.ExpiresAt, want)
		}
		pttl, err := s.client.PTTL(ctxT(t), keysFor(s.opts.Prefix, "k").record).Result()
		if err != nil || pttl < s.opts.TakeoverGrace || pttl > s.opts.TakeoverGrace+longTTL+time.Second {
			t.Fatalf("PTTL %v, %v; want about ttl+grace", pttl, err)
		}
	})

	t.Run("AcquireExisting", func(t *testing.T) {
		s := mk(t)
		l := mustAcquire(t, s, "k", fpA, longTTL)
		for _, fp := range []idem.Fingerprint{fpA, fpB} {
			rec := mustRecord(t, s, "k", fp, longTTL)
			if rec.Status != idem.StatusInProgress || rec.Token != l.Token || !rec.LeaseLive(time.Now()) || rec.Fingerprint != fpA {
				t.Fatalf("record %+v", rec)
			}
		}
	})

	t.Run("Complete", func(t *testing.T) {
		s := mk(t)
		l := mustAcquire(t, s, "k", fpA, longTTL)
		r := resp("done")
		if err := s.Complete(ctxT(t), l, r, retention); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Get(ctxT(t), "k")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != idem.StatusCompleted || rec.Token != l.Token || !rec.Response.Equal(&r) || !rec.LeaseExpiry.IsZero() {
			t.Fatalf("record %+v", rec)
		}
		if d := time.Until(rec.ExpiresAt) - retention; d < -2*time.Second || d > 2*time.Second {
			t.Fatalf("ExpiresAt %v is %v off now+retention", rec.ExpiresAt, d)
		}
		for _, fp := range []idem.Fingerprint{fpA, fpB} {
			if got := mustRecord(t, s, "k", fp, longTTL); got.Status != idem.StatusCompleted || !got.Response.Equal(&r) {
				t.Fatalf("Acquire after Complete: %+v", got)
			}
		}
		// Every fenced write on a finished record is refused.
		checkLost(t, "Complete again", s.Complete(ctxT(t), l, resp("other"), retention))
		checkLost(t, "Fail", s.Fail(ctxT(t), l, resp("other"), retention))
		checkLost(t, "Heartbeat", s.Heartbeat(ctxT(t), l, longTTL))
		checkLost(t, "Release", s.Release(ctxT(t), l))
		if rec2, _ := s.Get(ctxT(t), "k"); !rec2.Response.Equal(&r) || rec2.Status != idem.StatusCompleted {
			t.Fatalf("record changed by refused writes: %+v", rec2)
		}
	})

	t.Run("Fail", func(t *testing.T) {
		s := mk(t)
		l := mustAcquire(t, s, "k", fpA, longTTL)
		r := idem.Response{Status: 402, Body: []byte("declined")}
		if err := s.Fail(ctxT(t), l, r, retention); err != nil {
			t.Fatal(err)
		}
		rec := mustRecord(t, s, "k", fpA, longTTL)
		if rec.Status != idem.StatusFailed || !rec.Response.Equal(&r) {
			t.Fatalf("record %+v", rec)
		}
		checkLost(t, "Complete after Fail", s.Complete(ctxT(t), l, resp("x"), retention))
	})

	t.Run("EmptyResponse", func(t *testing.T) {
		s := mk(t)
		l := mustAcquire(t, s, "k", fpA, longTTL)
		if err := s.Complete(ctxT(t), l, idem.Response{}, retention); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Get(ctxT(t), "k")
		if err != nil || rec.Response == nil || rec.Response.Status != 0 || len(rec.Response.Body) != 0 {
			t.Fatalf("record %+v, %v", rec, err)
		}
	})

	t.Run("ReleaseKeepsCounter", func(t *testing.T) {
		s := mk(t)
		l1 := mustAcquire(t, s, "k", fpA, longTTL)
		if err := s.Release(ctxT(t), l1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctxT(t), "k"); !errors.Is(err, idem.ErrNotFound) {
			t.Fatalf("Get after Release: %v", err)
		}
		checkLost(t, "Release twice", s.Release(ctxT(t), l1))
		checkLost(t, "Complete after Release", s.Complete(ctxT(t), l1, resp("x"), retention))
		l2 := mustAcquire(t, s, "k", fpB, longTTL)
		if l2.Token <= l1.Token || l2.PrevToken != 0 {
			t.Fatalf("after Release: token %d (prev %d), first was %d", l2.Token, l2.PrevToken, l1.Token)
		}
		checkLost(t, "old holder Complete", s.Complete(ctxT(t), l1, resp("x"), retention))
	})

	t.Run("TakeOver", func(t *testing.T) {
		s := mk(t)
		old := mustAcquire(t, s, "k", fpA, shortTTL)
		time.Sleep(shortTTL + 50*time.Millisecond)
		// A different request never takes over; the record is unchanged.
		if rec := mustRecord(t, s, "k", fpB, longTTL); rec.Token != old.Token || rec.LeaseLive(time.Now()) {
			t.Fatalf("different fingerprint: %+v", rec)
		}
		l := mustAcquire(t, s, "k", fpA, longTTL)
		if l.Token <= old.Token || l.PrevToken != old.Token || !l.TakeOver() {
			t.Fatalf("take-over lease %+v, old token %d", l, old.Token)
		}
		checkLost(t, "old Heartbeat", s.Heartbeat(ctxT(t), old, longTTL))
		checkLost(t, "old Complete", s.Complete(ctxT(t), old, resp("stale"), retention))
		checkLost(t, "old Fail", s.Fail(ctxT(t), old, resp("stale"), retention))
		checkLost(t, "old Release", s.Release(ctxT(t), old))
		if err := s.Complete(ctxT(t), l, resp("fresh"), retention); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Get(ctxT(t), "k")
		if err != nil || string(rec.Response.Body) != "fresh" || rec.Token != l.Token {
			t.Fatalf("record %+v, %v", rec, err)
		}
	})

	t.Run("ExpiredLeaseStillOwned", func(t *testing.T) {
		s := mk(t)
		l := mustAcquire(t, s, "k", fpA, shortTTL)
		first := l.Expiry
		time.Sleep(shortTTL + 50*time.Millisecond)
		if err := s.Heartbeat(ctxT(t), l, longTTL); err != nil {
			t.Fatalf("Heartbeat of an expired lease nobody took: %v", err)
		}
		if !l.Expiry.After(first.Add(longTTL / 2)) {
			t.Fatalf("Heartbeat did not move Expiry: %v -> %v", first, l.Expiry)
		}
		rec := mustRecord(t, s, "k", fpA, longTTL)
		if !rec.LeaseExpiry.Equal(l.Expiry) || !near(rec.ExpiresAt, l.Expiry.Add(s.opts.TakeoverGrace)) {
			t.Fatalf("record %+v, lease expiry %v", rec, l.Expiry)
		}
		l2 := mustAcquire(t, s, "k2", fpA, shortTTL)
		time.Sleep(shortTTL + 50*time.Millisecond)
		if err := s.Complete(ctxT(t), l2, resp("late"), retention); err != nil {
			t.Fatalf("Complete of an expired lease nobody took: %v", err)
		}
	})

	t.Run("TokenSurvivesExpiry", func(t *testing.T) {
		s := mk(t)
		l1 := mustAcquire(t, s, "k", fpA, longTTL)
		if err := s.Complete(ctxT(t), l1, resp("x"), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		waitGone(t, s, "k", 5*time.Second)
		l2 := mustAcquire(t, s, "k", fpA, longTTL)
		if l2.Token <= l1.Token || l2.PrevToken != 0 {
			t.Fatalf("after expiry: token %d prev %d, before %d", l2.Token, l2.PrevToken, l1.Token)
		}
		// An in-progress record expires after lease + grace.
		g := newGraceStore(t, s, 50*time.Millisecond)
		l3 := mustAcquire(t, g, "k3", fpA, 50*time.Millisecond)
		waitGone(t, g, "k3", 5*time.Second)
		l4 := mustAcquire(t, g, "k3", fpA, longTTL)
		if l4.Token <= l3.Token || l4.PrevToken != 0 {
			t.Fatalf("after grace: token %d prev %d, before %d", l4.Token, l4.PrevToken, l3.Token)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		s := mk(t)
		const n = 32
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			leases []*idem.Lease
			recs   int
		)
		for range n {
			wg.Go(func() {
				l, rec, err := s.Acquire(ctxT(t), "hot", fpA, longTTL)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Error(err)
				case l != nil:
					leases = append(leases, l)
				case rec != nil:
					recs++
				}
			})
		}
		wg.Wait()
		if len(leases) != 1 || recs != n-1 {
			t.Fatalf("%d leases and %d records from %d callers, want exactly one lease", len(leases), recs, n)
		}
	})

	t.Run("ConcurrentTakeOver", func(t *testing.T) {
		s := mk(t)
		old := mustAcquire(t, s, "k", fpA, shortTTL)
		time.Sleep(shortTTL + 50*time.Millisecond)
		var wg sync.WaitGroup
		wins := make(chan *idem.Lease, 16)
		for range 16 {
			wg.Go(func() {
				if l, _, err := s.Acquire(ctxT(t), "k", fpA, longTTL); err != nil {
					t.Error(err)
				} else if l != nil {
					wins <- l
				}
			})
		}
		wg.Wait()
		close(wins)
		if len(wins) != 1 {
			t.Fatalf("%d take-overs, want 1", len(wins))
		}
		if l := <-wins; l.PrevToken != old.Token {
			t.Fatalf("PrevToken %d, want %d", l.PrevToken, old.Token)
		}
	})

	t.Run("SlotSharesCounter", func(t *testing.T) {
		s := mk(t)
		twin := sameSlotKey("k")
		var last idem.Token
		for i := range 10 {
			key := "k"
			if i%2 == 1 {
				key = twin
			}
			l := mustAcquire(t, s, key, fpA, longTTL)
			if l.Token <= last {
				t.Fatalf("%q: token %d after %d", key, l.Token, last)
			}
			last = l.Token
			if err := s.Release(ctxT(t), l); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("TakeOverSurvivesLostCounter", func(t *testing.T) {
		s := mk(t)
		old := mustAcquire(t, s, "k", fpA, shortTTL)
		if err := s.client.Del(ctxT(t), keysFor(s.opts.Prefix, "k").fence()).Err(); err != nil {
			t.Fatal(err)
		}
		waitLeaseExpired(t, old)
		l := mustAcquire(t, s, "k", fpA, longTTL)
		if l.Token <= old.Token || l.PrevToken != old.Token {
			t.Fatalf("take-over after counter loss: %+v, old token %d", l, old.Token)
		}
		// The counter was repaired: the next token is higher still.
		if err := s.Release(ctxT(t), l); err != nil {
			t.Fatal(err)
		}
		if l2 := mustAcquire(t, s, "k", fpA, longTTL); l2.Token <= l.Token {
			t.Fatalf("token %d after %d", l2.Token, l.Token)
		}
	})

	t.Run("TokensUniqueAcrossSlots", func(t *testing.T) {
		s := mk(t)
		a, b := "k", "k2"
		if keySlot(a) == keySlot(b) {
			t.Fatal("pick keys in different slots")
		}
		la, lb := mustAcquire(t, s, a, fpA, longTTL), mustAcquire(t, s, b, fpA, longTTL)
		if la.Token == lb.Token {
			t.Fatalf("keys %q and %q both got token %d", a, b, la.Token)
		}
		for _, l := range []*idem.Lease{la, lb} {
			if got, want := uint64(l.Token)%slotCount, uint64(keySlot(escapeTag(l.Key))); got != want {
				t.Fatalf("token %d of %q encodes slot %d, want %d", l.Token, l.Key, got, want)
			}
		}
	})

	t.Run("AwkwardKeys", func(t *testing.T) {
		s := mk(t)
		keys := []string{"{", "}", "{}", "}{", "a{b}c", "%7B", "%", "~!@#$%^&*()"}
		// Each key gets a lease of its own (no record shared with an earlier
		// key) and keeps its own response.
		for _, k := range keys {
			l := mustAcquire(t, s, k, fpA, longTTL)
			if err := s.Complete(ctxT(t), l, resp(k), retention); err != nil {
				t.Fatalf("%q: %v", k, err)
			}
		}
		for _, k := range keys {
			rec, err := s.Get(ctxT(t), k)
			if err != nil || string(rec.Response.Body) != k || rec.Key != k {
				t.Fatalf("Get(%q) = %+v, %v", k, rec, err)
			}
		}
	})

	t.Run("Corrupt", func(t *testing.T) { corruptSuite(t, mk) })

	t.Run("InvalidInput", func(t *testing.T) {
		s := mk(t)
		if _, _, err := s.Acquire(ctxT(t), "bad key", fpA, longTTL); !errors.Is(err, idem.ErrInvalidKey) {
			t.Fatalf("Acquire: %v", err)
		}
		if _, err := s.Get(ctxT(t), ""); !errors.Is(err, idem.ErrInvalidKey) {
			t.Fatalf("Get: %v", err)
		}
		if _, _, err := s.Acquire(ctxT(t), "k", fpA, 0); err == nil {
			t.Fatal("Acquire with zero TTL succeeded")
		}
		l := mustAcquire(t, s, "k", fpA, longTTL)
		if err := s.Complete(ctxT(t), l, resp(""), 0); err == nil {
			t.Fatal("Complete with zero retention succeeded")
		}
		if err := s.Release(ctxT(t), nil); err == nil {
			t.Fatal("Release(nil) succeeded")
		}
	})
}

// newGraceStore returns a store sharing s's client and prefix with another
// take-over grace period.
func newGraceStore(t *testing.T, s *Store, grace time.Duration) *Store {
	t.Helper()
	opts := s.opts
	opts.TakeoverGrace = grace
	g, err := New(s.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func checkLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("%s: got %v, want ErrLeaseLost", what, err)
	}
}

// sameSlotKey returns another key whose record lives in the same hash slot
// as key's.
func sameSlotKey(key string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("twin%d", i)
		if keySlot(escapeTag(k)) == keySlot(escapeTag(key)) {
			return k
		}
	}
}

// near reports whether a and b are within a few milliseconds: ExpiresAt is
// computed from the server time and the key's PTTL, read in one script.
func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -5*time.Millisecond && d < 5*time.Millisecond
}

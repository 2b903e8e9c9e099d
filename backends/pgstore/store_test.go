package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

func TestNewValidatesOptions(t *testing.T) {
	pool := newPool(t)
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero value", Options{}, true},
		{"schema and table", Options{Schema: "public", Table: "my_keys"}, true},
		{"upper case", Options{Table: "Keys"}, false},
		{"quote", Options{Table: `keys"; drop table x; --`}, false},
		{"leading digit", Options{Table: "1keys"}, false},
		{"too long", Options{Table: strings.Repeat("k", 41)}, false},
		{"bad schema", Options{Schema: "a.b"}, false},
		{"negative grace", Options{TakeoverGrace: -time.Second}, false},
		{"negative batch", Options{SweepBatch: -1}, false},
		{"negative poll", Options{PollInterval: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(pool, tt.opts)
			if (err == nil) != tt.ok {
				t.Fatalf("New(%+v) error = %v, want ok=%v", tt.opts, err, tt.ok)
			}
		})
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil pool) succeeded")
	}
	s, _ := New(pool, Options{})
	got := s.Options()
	if got.Table != DefaultTable || got.TakeoverGrace != DefaultTakeoverGrace || got.SweepBatch != DefaultSweepBatch ||
		got.SweepInterval != DefaultSweepInterval || got.PollInterval != DefaultPollInterval {
		t.Errorf("defaults not applied: %+v", got)
	}
	if s.table != `"idem_keys"` || s.seq != `"idem_keys_token_seq"` {
		t.Errorf("quoted names = %s, %s", s.table, s.seq)
	}
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- s.Migrate(ctx) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.Get(ctx, "k"); err != nil || rec.Token != l.Token {
		t.Fatalf("record lost by Migrate: %v, %v", rec, err)
	}
}

func TestAcquireAbsentThenPresent(t *testing.T) {
	s := newStore(t, Options{})
	before := time.Now()
	l := mustAcquire(t, s, "k1", fp("a"), time.Minute)
	if l.Key != "k1" || l.Token == 0 || l.PrevToken != 0 || l.Fingerprint != fp("a") {
		t.Fatalf("lease = %+v", l)
	}
	// Server and test run on one host: the expiry is about a minute away.
	if d := l.Expiry.Sub(before); d < 50*time.Second || d > 70*time.Second {
		t.Errorf("lease expiry %v is %v after the call, want about 1m", l.Expiry, d)
	}

	for _, f := range []idem.Fingerprint{fp("a"), fp("b")} {
		rec := mustRecord(t, s, "k1", f, time.Minute)
		if rec.Status != idem.StatusInProgress || rec.Token != l.Token || rec.Fingerprint != fp("a") ||
			!rec.LeaseExpiry.Equal(l.Expiry) || rec.Response != nil {
			t.Errorf("record = %+v, want the lease's in-progress record", rec)
		}
		if want := l.Expiry.Add(DefaultTakeoverGrace); !rec.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt = %v, want lease expiry + grace = %v", rec.ExpiresAt, want)
		}
	}
	rec, err := s.Get(context.Background(), "k1")
	if err != nil || rec.Token != l.Token || rec.Status != idem.StatusInProgress {
		t.Fatalf("Get = %+v, %v", rec, err)
	}
}

func TestCompleteAndFailAreReplayed(t *testing.T) {
	ctx := context.Background()
	for _, st := range []idem.Status{idem.StatusCompleted, idem.StatusFailed} {
		t.Run(st.String(), func(t *testing.T) {
			s := newStore(t, Options{})
			l := mustAcquire(t, s, "k", fp("a"), time.Minute)
			want := resp("done")
			finish := s.Complete
			if st == idem.StatusFailed {
				finish = s.Fail
			}
			before := time.Now()
			if err := finish(ctx, l, want, time.Hour); err != nil {
				t.Fatal(err)
			}
			rec := mustRecord(t, s, "k", fp("a"), time.Minute)
			if rec.Status != st || rec.Token != l.Token || !rec.LeaseExpiry.IsZero() || !rec.Response.Equal(&want) {
				t.Fatalf("record = %+v", rec)
			}
			if d := rec.ExpiresAt.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("ExpiresAt %v after completion, want about 1h", d)
			}
			// A different fingerprint sees the record, unchanged.
			if rec := mustRecord(t, s, "k", fp("b"), time.Minute); rec.Status != st || rec.Fingerprint != fp("a") {
				t.Errorf("other fingerprint got %+v", rec)
			}
			// Every fenced write is now refused.
			assertLeaseLost(t, s, l)
			if got, err := s.Get(ctx, "k"); err != nil || got.Status != st || !got.Response.Equal(&want) {
				t.Errorf("refused writes changed the record: %+v, %v", got, err)
			}
		})
	}
}

// assertLeaseLost checks that every fenced write with l is refused.
func assertLeaseLost(t *testing.T, s *Store, l *idem.Lease) {
	t.Helper()
	ctx := context.Background()
	cp := *l
	for name, err := range map[string]error{
		"Heartbeat": s.Heartbeat(ctx, &cp, time.Minute),
		"Complete":  s.Complete(ctx, l, resp("late"), time.Hour),
		"Fail":      s.Fail(ctx, l, resp("late"), time.Hour),
		"Release":   s.Release(ctx, l),
	} {
		if !errors.Is(err, idem.ErrLeaseLost) {
			t.Errorf("%s with token %d: err = %v, want ErrLeaseLost", name, l.Token, err)
		}
	}
	if !cp.Expiry.Equal(l.Expiry) {
		t.Errorf("refused Heartbeat changed Expiry")
	}
}

func TestReleaseMakesKeyAbsent(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	assertAbsent(t, s, l, "after Release")
}

// assertAbsent checks that old's key has no record (what says when): Get
// finds nothing, old is refused, and any fingerprint may claim the key
// with a higher token and no take-over.
func assertAbsent(t *testing.T, s *Store, old *idem.Lease, what string) {
	t.Helper()
	if _, err := s.Get(context.Background(), old.Key); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Get %s: %v, want ErrNotFound", what, err)
	}
	assertLeaseLost(t, s, old)
	l := mustAcquire(t, s, old.Key, fp("b"), time.Minute)
	if l.Token <= old.Token || l.PrevToken != 0 {
		t.Fatalf("claim %s = %+v, want a fresh lease above token %d", what, l, old.Token)
	}
}

func TestHeartbeatExtendsLease(t *testing.T) {
	s := newStore(t, Options{})
	l := mustAcquire(t, s, "k", fp("a"), time.Second)
	old := l.Expiry
	if err := s.Heartbeat(context.Background(), l, time.Hour); err != nil {
		t.Fatal(err)
	}
	if l.Expiry.Sub(old) < 59*time.Minute {
		t.Fatalf("Expiry moved from %v to %v, want about 1h later", old, l.Expiry)
	}
	rec, err := s.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.LeaseExpiry.Equal(l.Expiry) || !rec.ExpiresAt.Equal(l.Expiry.Add(DefaultTakeoverGrace)) {
		t.Errorf("stored lease %v / expires %v, lease says %v", rec.LeaseExpiry, rec.ExpiresAt, l.Expiry)
	}
}

func TestExpiredLeaseStillOwnedUntilTakenOver(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	l := mustAcquire(t, s, "k", fp("a"), 30*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if err := s.Heartbeat(ctx, l, time.Minute); err != nil {
		t.Fatalf("Heartbeat of an expired lease not taken over: %v", err)
	}
	if rec := mustRecord(t, s, "k", fp("a"), time.Minute); rec.Token != l.Token {
		t.Fatalf("renewed lease was taken over: %+v", rec)
	}
	l2 := mustAcquire(t, s, "k2", fp("a"), 30*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if err := s.Complete(ctx, l2, resp("ok"), time.Hour); err != nil {
		t.Fatalf("Complete of an expired lease not taken over: %v", err)
	}
}

func TestTakeOver(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	old := mustAcquire(t, s, "k", fp("a"), 30*time.Millisecond)
	time.Sleep(60 * time.Millisecond)

	// Another request with the same key does not take over; it sees the record.
	if rec := mustRecord(t, s, "k", fp("other"), time.Minute); rec.Token != old.Token || rec.LeaseLive(time.Now()) {
		t.Fatalf("different fingerprint got %+v", rec)
	}
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	if l.Token <= old.Token || l.PrevToken != old.Token || !l.TakeOver() {
		t.Fatalf("take-over lease = %+v, want token > %d and PrevToken %d", l, old.Token, old.Token)
	}
	assertLeaseLost(t, s, old)
	if err := s.Complete(ctx, l, resp("new"), time.Hour); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(ctx, "k")
	if want := resp("new"); err != nil || rec.Token != l.Token || !rec.Response.Equal(&want) {
		t.Fatalf("record = %+v, %v", rec, err)
	}
}

func TestGraceElapsedIsAbsent(t *testing.T) {
	s := newStore(t, Options{TakeoverGrace: 30 * time.Millisecond})
	old := mustAcquire(t, s, "k", fp("a"), 30*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	assertAbsent(t, s, old, "past grace")
}

func TestRetentionExpiryIsExactBeforeSweep(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	if err := s.Complete(ctx, l, resp("x"), 40*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "k"); err != nil {
		t.Fatalf("Get within retention: %v", err)
	}
	time.Sleep(80 * time.Millisecond)
	assertAbsent(t, s, l, "past retention")
}

func TestTokensStrictlyIncreasePerKey(t *testing.T) {
	s := newStore(t, Options{TakeoverGrace: 20 * time.Millisecond})
	ctx := context.Background()
	var last idem.Token
	next := func(l *idem.Lease) {
		t.Helper()
		if l.Token <= last {
			t.Fatalf("token %d after %d", l.Token, last)
		}
		last = l.Token
	}
	for i := range 5 {
		l := mustAcquire(t, s, "k", fp("a"), 20*time.Millisecond)
		next(l)
		switch i % 4 {
		case 0: // released
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		case 1: // completed, then retention expires
			if err := s.Complete(ctx, l, resp("x"), 10*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond)
		case 2: // taken over
			time.Sleep(30 * time.Millisecond)
			l2 := mustAcquire(t, s, "k", fp("a"), time.Minute)
			next(l2)
			if err := s.Release(ctx, l2); err != nil {
				t.Fatal(err)
			}
		case 3: // abandoned past the grace period, and the row deleted
			time.Sleep(60 * time.Millisecond)
			if _, err := s.pool.Exec(ctx, "UPDATE "+s.table+" SET expires_at = expires_at - $1::interval WHERE key = 'k'",
				sweepMargin); err != nil {
				t.Fatal(err)
			}
			if n, err := s.Sweep(ctx); err != nil || n != 1 {
				t.Fatalf("Sweep = %d, %v; want the abandoned row", n, err)
			}
		}
	}
}

func TestInvalidInput(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	for _, key := range []string{"", "has space", strings.Repeat("k", idem.MaxKeyLen+1)} {
		if _, _, err := s.Acquire(ctx, key, fp("a"), time.Minute); !errors.Is(err, idem.ErrInvalidKey) {
			t.Errorf("Acquire(%q): %v, want ErrInvalidKey", key, err)
		}
	}
	if _, _, err := s.Acquire(ctx, "k", fp("a"), 0); err == nil {
		t.Error("Acquire with zero TTL succeeded")
	}
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	if err := s.Heartbeat(ctx, l, -time.Second); err == nil {
		t.Error("Heartbeat with negative TTL succeeded")
	}
	if err := s.Complete(ctx, l, resp("x"), -time.Second); err == nil || errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("Complete with negative retention: %v", err)
	}
	for _, tok := range []idem.Token{0, l.Token + 1000, 1 << 63} {
		bad := *l
		bad.Token = tok
		assertLeaseLost(t, s, &bad)
	}
	ghost := idem.Lease{Key: "never", Token: l.Token}
	assertLeaseLost(t, s, &ghost)
	if _, err := s.Get(ctx, "never"); !errors.Is(err, idem.ErrNotFound) {
		t.Errorf("Get(never): %v", err)
	}
}

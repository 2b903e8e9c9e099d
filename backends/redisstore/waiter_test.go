package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// waiterSuite checks WaitChange on stores made by mk.
func waiterSuite(t *testing.T, mk func(t *testing.T, opts Options) *Store) {
	// slow is a poll interval no test waits for: a wake-up faster than it
	// came from a notification or the lease expiry.
	const slow = 20 * time.Second

	t.Run("NothingToWaitFor", func(t *testing.T) {
		s := mk(t, Options{PollInterval: slow})
		if err := s.WaitChange(ctxT(t), "absent"); err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, s, "done", fpA, longTTL)
		if err := s.Complete(ctxT(t), l, resp("x"), retention); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitChange(ctxT(t), "done"); err != nil {
			t.Fatal(err)
		}
	})

	wakes := []struct {
		name string
		do   func(s *Store, l *idem.Lease) error
	}{
		{"Complete", func(s *Store, l *idem.Lease) error { return s.Complete(context.Background(), l, resp("x"), retention) }},
		{"Fail", func(s *Store, l *idem.Lease) error { return s.Fail(context.Background(), l, resp("x"), retention) }},
		{"Release", func(s *Store, l *idem.Lease) error { return s.Release(context.Background(), l) }},
	}
	for _, w := range wakes {
		t.Run("WokenBy"+w.name, func(t *testing.T) {
			s := mk(t, Options{PollInterval: slow})
			l := mustAcquire(t, s, "k", fpA, longTTL)
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- s.WaitChange(ctxT(t), "k") }()
			time.Sleep(100 * time.Millisecond)
			if err := w.do(s, l); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("WaitChange still blocked 5s after %s", w.name)
			}
			if d := time.Since(start); d < 90*time.Millisecond {
				t.Fatalf("WaitChange returned after %v, before the change", d)
			}
		})
	}

	t.Run("LeaseExpiry", func(t *testing.T) {
		s := mk(t, Options{PollInterval: slow})
		mustAcquire(t, s, "k", fpA, 300*time.Millisecond)
		waitChangeAfter(t, s, "k", 150*time.Millisecond) // about the lease TTL
	})

	t.Run("Polling", func(t *testing.T) {
		s := mk(t, Options{PollInterval: 20 * time.Millisecond, DisableNotify: true})
		l := mustAcquire(t, s, "k", fpA, longTTL)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_ = s.Complete(context.Background(), l, resp("x"), retention)
		}()
		waitChangeAfter(t, s, "k", 90*time.Millisecond)
	})

	t.Run("ContextEnds", func(t *testing.T) {
		s := mk(t, Options{PollInterval: slow})
		mustAcquire(t, s, "k", fpA, longTTL)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		if err := s.WaitChange(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitChange: %v, want DeadlineExceeded", err)
		}
	})
}

func TestWaitChange(t *testing.T) {
	t.Parallel()
	client := newClient(t)
	waiterSuite(t, func(t *testing.T, opts Options) *Store { return newStore(t, client, opts) })
}

// waitChangeAfter waits for a change of key on s and fails t unless it
// came at least min after the call (and within 5 s).
func waitChangeAfter(t *testing.T, s *Store, key string, min time.Duration) {
	t.Helper()
	start := time.Now()
	if err := s.WaitChange(ctxT(t), key); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < min || d > 5*time.Second {
		t.Fatalf("WaitChange returned after %v, want at least %v", d, min)
	}
}

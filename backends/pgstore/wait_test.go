package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitChangeReturnsAtOnceWithoutLiveLease(t *testing.T) {
	s := newStore(t, Options{PollInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitChange(ctx, "absent"); err != nil {
		t.Fatalf("absent key: %v", err)
	}
	l := mustAcquire(t, s, "done", fp("a"), time.Minute)
	if err := s.Complete(ctx, l, resp("x"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitChange(ctx, "done"); err != nil {
		t.Fatalf("completed key: %v", err)
	}
	mustAcquire(t, s, "expired", fp("a"), time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if err := s.WaitChange(ctx, "expired"); err != nil {
		t.Fatalf("expired lease: %v", err)
	}
}

func TestWaitChangeWakesOnEachChange(t *testing.T) {
	s := newStore(t, Options{PollInterval: 10 * time.Millisecond})
	ctx := context.Background()
	// Each change claims its key first (so the wait starts on a live
	// lease, however slow the machine) and returns what changes it later.
	changes := map[string]func(t *testing.T, key string) func(){
		"complete": func(t *testing.T, key string) func() {
			l := mustAcquire(t, s, key, fp("a"), time.Minute)
			return func() {
				time.Sleep(50 * time.Millisecond)
				if err := s.Complete(ctx, l, resp("x"), time.Hour); err != nil {
					t.Error(err)
				}
			}
		},
		"release": func(t *testing.T, key string) func() {
			l := mustAcquire(t, s, key, fp("a"), time.Minute)
			return func() {
				time.Sleep(50 * time.Millisecond)
				if err := s.Release(ctx, l); err != nil {
					t.Error(err)
				}
			}
		},
		"lease expiry": func(t *testing.T, key string) func() {
			mustAcquire(t, s, key, fp("a"), 80*time.Millisecond)
			return func() {}
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			key := "k-" + name[:3]
			later := change(t, key)
			done := make(chan struct{})
			go func() {
				defer close(done)
				later()
			}()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			start := time.Now()
			if err := s.WaitChange(wctx, key); err != nil {
				t.Fatalf("WaitChange: %v", err)
			}
			if d := time.Since(start); d < 10*time.Millisecond {
				t.Errorf("returned after %v, before the change", d)
			}
			<-done
			if rec, err := s.Get(ctx, key); err == nil && rec.LeaseLive(time.Now()) {
				t.Errorf("woke up while the lease is live: %+v", rec)
			}
		})
	}
}

func TestWaitChangeIgnoresHeartbeatAndHonoursContext(t *testing.T) {
	s := newStore(t, Options{PollInterval: 5 * time.Millisecond})
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				_ = s.Heartbeat(context.Background(), l, time.Minute)
			}
		}
	}()
	defer close(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := s.WaitChange(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitChange on a heartbeating lease: %v, want DeadlineExceeded", err)
	}
}

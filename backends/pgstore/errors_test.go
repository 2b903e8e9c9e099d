package pgstore

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idembench/idembench/idem"
)

// unreachableStore returns a Store whose pool points at a port nobody
// listens on.
func unreachableStore(t *testing.T) *Store {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // now nothing listens there
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+addr+"/test?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestUnreachableServerFailsClosed(t *testing.T) {
	s := unreachableStore(t)
	ctx := context.Background()
	l := &idem.Lease{Key: "k", Token: 7}
	_, _, acqErr := s.Acquire(ctx, "k", fp("a"), time.Minute)
	_, getErr := s.Get(ctx, "k")
	_, sweepErr := s.Sweep(ctx)
	for name, err := range map[string]error{
		"Acquire":    acqErr,
		"Get":        getErr,
		"Heartbeat":  s.Heartbeat(ctx, l, time.Minute),
		"Complete":   s.Complete(ctx, l, resp("x"), time.Hour),
		"Fail":       s.Fail(ctx, l, resp("x"), time.Hour),
		"Release":    s.Release(ctx, l),
		"Sweep":      sweepErr,
		"WaitChange": s.WaitChange(ctx, "k"),
	} {
		if !errors.Is(err, idem.ErrBackend) {
			t.Errorf("%s: %v, want ErrBackend", name, err)
		}
		if idem.Ambiguous(err) {
			t.Errorf("%s: %v is ambiguous, but nothing reached a server", name, err)
		}
		if errors.Is(err, idem.ErrLeaseLost) || errors.Is(err, idem.ErrNotFound) {
			t.Errorf("%s: %v claims to know the record", name, err)
		}
	}
	if err := s.Migrate(ctx); err == nil {
		t.Error("Migrate succeeded without a server")
	}
}

// TestTimeoutAfterSendIsAmbiguous blocks a fenced write behind a row lock held
// by another transaction, so its context expires while the statement is on
// the server: the outcome is unknown and must say so.
func TestTimeoutAfterSendIsAmbiguous(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	l := mustAcquire(t, s, "k", fp("a"), time.Minute)

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+s.table+" WHERE key = 'k' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	// The deadline must fall after the statement was sent (it then waits on
	// the row lock); on a loaded machine getting a connection alone took
	// longer than 100ms, so the statement was never sent (not ambiguous).
	const wait = time.Second
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err = s.Complete(tctx, l, resp("x"), time.Hour)
	if !errors.Is(err, idem.ErrBackend) || !idem.Ambiguous(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete timing out on the server: %v; want ambiguous ErrBackend wrapping DeadlineExceeded", err)
	}
	tctx2, cancel2 := context.WithTimeout(ctx, wait)
	defer cancel2()
	if _, _, err := s.Acquire(tctx2, "k", fp("a"), time.Minute); !idem.Ambiguous(err) {
		t.Fatalf("Acquire timing out on the server: %v; want ambiguous", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The cancelled statement did not apply: the lease is still held.
	if err := s.Complete(ctx, l, resp("x"), time.Hour); err != nil {
		t.Fatalf("Complete after the lock went away: %v", err)
	}
}

func TestCancelledContextIsNotAmbiguous(t *testing.T) {
	s := newStore(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Acquire(ctx, "k", fp("a"), time.Minute)
	if !errors.Is(err, context.Canceled) || idem.Ambiguous(err) {
		t.Fatalf("Acquire with a cancelled context: %v; want context.Canceled, not ambiguous", err)
	}
	if err := s.WaitChange(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitChange with a cancelled context: %v", err)
	}
}

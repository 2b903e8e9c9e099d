package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// seedRows inserts n completed rows named prefix-1..prefix-n whose expiry is
// at the server's now plus offset.
func seedRows(t *testing.T, s *Store, prefix string, n int, offset time.Duration) {
	t.Helper()
	f := fp("seed")
	_, err := s.pool.Exec(context.Background(), `
INSERT INTO `+s.table+` (key, status, fingerprint, token, response, created_at, updated_at, expires_at)
SELECT $1 || '-' || g, 'completed', $2, nextval('`+s.seq+`'::regclass), $3, now(), now(), now() + $4::interval
FROM generate_series(1, $5::int) g`,
		prefix, f[:], idem.EncodeResponse(&idem.Response{Status: 200}), offset, n)
	if err != nil {
		t.Fatalf("seed %s: %v", prefix, err)
	}
}

func countRows(t *testing.T, s *Store, where string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+s.table+" WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweepDeletesOnlyAbsentRows(t *testing.T) {
	s := newStore(t, Options{SweepBatch: 7})
	ctx := context.Background()
	seedRows(t, s, "old", 50, -sweepMargin-time.Second)
	seedRows(t, s, "recent", 5, -time.Second) // absent, but within the margin
	seedRows(t, s, "live", 20, time.Hour)
	l := mustAcquire(t, s, "released", fp("a"), time.Minute)
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE "+s.table+" SET expires_at = expires_at - $1::interval WHERE key = 'released'",
		sweepMargin+time.Second); err != nil {
		t.Fatal(err) // released long ago
	}
	mustAcquire(t, s, "held", fp("a"), time.Minute)

	n, err := s.Sweep(ctx)
	if err != nil || n != 51 {
		t.Fatalf("Sweep = %d, %v; want 50 expired rows and 1 tombstone", n, err)
	}
	if got := countRows(t, s, "true"); got != 26 {
		t.Fatalf("%d rows left, want the 20 live ones, the held lease and 5 recent", got)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want 0", n, err)
	}
}

// TestConcurrentSweepersDeleteEachRowOnce runs several sweepers, each on its
// own Store value and connections, against one table: together they must
// delete every expired row exactly once, without errors, and keep the live
// rows.
func TestConcurrentSweepersDeleteEachRowOnce(t *testing.T) {
	s := newStore(t, Options{SweepBatch: 50})
	const expired, live, sweepers = 3000, 300, 8
	seedRows(t, s, "old", expired, -sweepMargin-time.Second)
	seedRows(t, s, "live", live, time.Hour)

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	start := make(chan struct{})
	for range sweepers {
		other, err := New(newPool(t), s.opts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			for {
				n, err := other.Sweep(context.Background())
				if err != nil {
					t.Errorf("Sweep: %v", err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
				if n == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if total != expired {
		t.Errorf("sweepers report %d deletions, want exactly %d", total, expired)
	}
	if n := countRows(t, s, "key LIKE 'old-%'"); n != 0 {
		t.Errorf("%d expired rows left", n)
	}
	if n := countRows(t, s, "key LIKE 'live-%'"); n != live {
		t.Errorf("%d live rows left, want %d", n, live)
	}
}

func TestStartSweeper(t *testing.T) {
	s := newStore(t, Options{SweepInterval: 20 * time.Millisecond, SweepBatch: 10})
	stop := s.StartSweeper(context.Background())
	defer stop()
	seedRows(t, s, "old", 35, -sweepMargin-time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for countRows(t, s, "true") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("background sweeper left expired rows for 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	stop() // idempotent
}

func TestStartSweeperReportsErrors(t *testing.T) {
	s := unreachableStore(t)
	errs := make(chan error, 10)
	s.opts.SweepInterval = 10 * time.Millisecond
	s.opts.OnSweepError = func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := s.StartSweeper(ctx)
	defer stop()
	select {
	case err := <-errs:
		if !errors.Is(err, idem.ErrBackend) {
			t.Errorf("sweeper error %v, want ErrBackend", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no sweeper error reported")
	}
	cancel() // ending ctx stops the goroutine too; stop still returns
}

package idem_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// slowBatchStore is a memstore whose every call takes 2ms, as a network
// round trip would, and which counts the batches it is sent.
type slowBatchStore struct {
	*memstore.Store
	batches, batched, singles atomic.Int64
}

func (s *slowBatchStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	s.singles.Add(1)
	time.Sleep(2 * time.Millisecond)
	return s.Store.Acquire(ctx, key, fp, ttl)
}

func (s *slowBatchStore) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, ttl time.Duration) []idem.AcquireResult {
	s.batches.Add(1)
	s.batched.Add(int64(len(reqs)))
	time.Sleep(2 * time.Millisecond)
	return s.Store.AcquireBatch(ctx, reqs, ttl)
}

func TestCoalescingGroupsConcurrentClaimsOnly(t *testing.T) {
	for _, tc := range []struct {
		callers     int
		wantBatches bool
	}{{1, false}, {32, true}} {
		t.Run(fmt.Sprint(tc.callers, " callers"), func(t *testing.T) {
			st := &slowBatchStore{Store: newStore(t)}
			e := idem.New(st, idem.WithCoalescing(idem.CoalesceOptions{MaxInFlight: 1}))
			defer e.Close()
			tenEach(t, e, tc.callers)
			total := st.singles.Load() + st.batched.Load()
			if total != int64(tc.callers*10) {
				t.Fatalf("%d claims reached the store, want %d", total, tc.callers*10)
			}
			if got := st.batches.Load() > 0; got != tc.wantBatches {
				t.Fatalf("%d batches (%d claims in them, %d alone); want batches: %v", st.batches.Load(), st.batched.Load(), st.singles.Load(), tc.wantBatches)
			}
		})
	}
}

// pooledStore is a slowBatchStore with a pool of size connections.
type pooledStore struct {
	*slowBatchStore
	size int
}

func (p pooledStore) PoolSize() int { return p.size }

// TestCoalescingBatchesOnlyBeyondThePool runs callers on a store whose
// pool has 4 connections, with coalescing at its defaults: up to 4
// callers never have more than 4 claims under way, so none is batched
// (every claim goes alone, as without coalescing); 32 callers are
// batched. A BatchStore that states no pool size is never batched.
func TestCoalescingBatchesOnlyBeyondThePool(t *testing.T) {
	on := []idem.Option{idem.WithCoalescing(idem.CoalesceOptions{})}
	for _, tc := range []struct {
		name        string
		pool        int // 0: the store is no PoolSizer
		callers     int
		opts        []idem.Option
		wantBatches bool
	}{
		{"1 caller, pool 4", 4, 1, on, false},
		{"4 callers, pool 4", 4, 4, on, false},
		{"32 callers, pool 4", 4, 32, on, true},
		{"32 callers, no pool size", 0, 32, on, false},
		// Coalescing is on by default, and WithoutCoalescing turns it off.
		{"32 callers, pool 4, default", 4, 32, nil, true},
		{"32 callers, pool 4, without", 4, 32, []idem.Option{idem.WithoutCoalescing()}, false},
		{"32 callers, pool 4, on then off", 4, 32, append(on, idem.WithoutCoalescing()), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := &slowBatchStore{Store: newStore(t)}
			var st idem.Store = slow
			if tc.pool > 0 {
				st = pooledStore{slow, tc.pool}
			}
			e := idem.New(st, tc.opts...)
			defer e.Close()
			tenEach(t, e, tc.callers)
			if total := slow.singles.Load() + slow.batched.Load(); total != int64(tc.callers*10) {
				t.Fatalf("%d claims reached the store, want %d", total, tc.callers*10)
			}
			if got := slow.batches.Load() > 0; got != tc.wantBatches {
				t.Fatalf("%d batches (%d claims in them, %d alone); want batches: %v", slow.batches.Load(), slow.batched.Load(), slow.singles.Load(), tc.wantBatches)
			}
		})
	}
}

// meteredStore is a memstore with a pool of size connections whose every
// claim and outcome write (alone or batched) takes 1ms, and which records
// the most of them it had under way at once.
type meteredStore struct {
	*memstore.Store
	size              int
	under, most       atomic.Int64
	batches, batched  atomic.Int64
	block, blockEnter chan struct{} // when set, Acquire of key "block" waits on block
}

func (s *meteredStore) PoolSize() int { return s.size }

func (s *meteredStore) enter() func() {
	n := s.under.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(time.Millisecond)
	return func() { s.under.Add(-1) }
}

func (s *meteredStore) Acquire(ctx context.Context, key string, fp idem.Fingerprint, ttl time.Duration) (*idem.Lease, *idem.Record, error) {
	defer s.enter()()
	if key == "block" && s.block != nil {
		close(s.blockEnter)
		<-s.block
	}
	return s.Store.Acquire(ctx, key, fp, ttl)
}

func (s *meteredStore) Complete(ctx context.Context, l *idem.Lease, r idem.Response, ret time.Duration) error {
	defer s.enter()()
	return s.Store.Complete(ctx, l, r, ret)
}

func (s *meteredStore) AcquireBatch(ctx context.Context, reqs []idem.AcquireRequest, ttl time.Duration) []idem.AcquireResult {
	defer s.enter()()
	s.batches.Add(1)
	s.batched.Add(int64(len(reqs)))
	return s.Store.AcquireBatch(ctx, reqs, ttl)
}

func (s *meteredStore) FinishBatch(ctx context.Context, fs []idem.Finish, ret time.Duration) []error {
	defer s.enter()()
	s.batches.Add(1)
	s.batched.Add(int64(len(fs)))
	return s.Store.FinishBatch(ctx, fs, ret)
}

// TestCoalescingKeepsWithinThePool runs twice as many callers as the
// store's pool has connections: claims and outcome writes together never
// exceed the pool (with a bound per kind, as before 2026-11-26's fix, twice
// the pool could be under way: the calls then queued for a connection
// instead of sharing a batch, and nothing was batched until twice the
// pool's callers), and the calls beyond the pool are batched.
func TestCoalescingKeepsWithinThePool(t *testing.T) {
	const pool, callers = 4, 8
	st := &meteredStore{Store: newStore(t), size: pool}
	e := idem.New(st, idem.WithCoalescing(idem.CoalesceOptions{}))
	defer e.Close()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range 20 {
				if _, err := e.Do(context.Background(), fmt.Sprintf("k%d-%d", c, i), fpA, ok("x")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if m := st.most.Load(); m > pool {
		t.Errorf("%d store calls under way at once on a pool of %d", m, pool)
	}
	if st.batches.Load() == 0 {
		t.Errorf("%d callers on a pool of %d: nothing batched", callers, pool)
	}
}

// TestCoalescingQueuedCallCancelled: a call whose context ends while it is
// queued for a batch leaves the queue without reaching the store and
// returns the context's error, not an ambiguous one (nothing was sent).
func TestCoalescingQueuedCallCancelled(t *testing.T) {
	st := &meteredStore{Store: newStore(t), size: 1, block: make(chan struct{}), blockEnter: make(chan struct{})}
	e := idem.New(st, idem.WithCoalescing(idem.CoalesceOptions{}))
	defer e.Close()
	first := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), "block", fpA, ok("x"))
		first <- err
	}()
	<-st.blockEnter // the pool's one slot is taken
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	var ran atomic.Bool
	go func() {
		_, err := e.Do(ctx, "queued", fpA, func(context.Context) (idem.Response, error) {
			ran.Store(true)
			return idem.Response{Status: 200}, nil
		})
		queued <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it queue; if it has not yet, it finds the slot taken anyway
	cancel()
	err := <-queued
	if err == nil || !errors.Is(err, context.Canceled) || idem.Ambiguous(err) {
		t.Fatalf("queued call cancelled: err %v (ambiguous %v), want context.Canceled, not ambiguous", err, idem.Ambiguous(err))
	}
	close(st.block)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("the cancelled call's function ran")
	}
	if _, err := st.Store.Get(context.Background(), "queued"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the cancelled call reached the store: Get = %v", err)
	}
	// The slot is free again: a later call goes through.
	if _, err := e.Do(context.Background(), "after", fpA, ok("x")); err != nil {
		t.Fatal(err)
	}
}

// tenEach runs callers goroutines that each call Do on e for ten keys of
// their own, and waits for them; an error fails t.
func tenEach(t *testing.T, e *idem.Engine, callers int) {
	t.Helper()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range 10 {
				if _, err := e.Do(context.Background(), fmt.Sprintf("k%d-%d", c, i), fpA, ok("x")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

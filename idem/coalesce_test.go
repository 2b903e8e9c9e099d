package idem_test

import (
	"context"
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
			var wg sync.WaitGroup
			for c := range tc.callers {
				wg.Go(func() {
					for i := range 10 {
						if _, err := e.Do(context.Background(), fmt.Sprintf("k%d-%d", c, i), fpA, ok("x")); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
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
			var wg sync.WaitGroup
			for c := range tc.callers {
				wg.Go(func() {
					for i := range 10 {
						if _, err := e.Do(context.Background(), fmt.Sprintf("k%d-%d", c, i), fpA, ok("x")); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			if total := slow.singles.Load() + slow.batched.Load(); total != int64(tc.callers*10) {
				t.Fatalf("%d claims reached the store, want %d", total, tc.callers*10)
			}
			if got := slow.batches.Load() > 0; got != tc.wantBatches {
				t.Fatalf("%d batches (%d claims in them, %d alone); want batches: %v", slow.batches.Load(), slow.batched.Load(), slow.singles.Load(), tc.wantBatches)
			}
		})
	}
}

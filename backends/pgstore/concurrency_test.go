package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestConcurrentAcquireGrantsOneLease(t *testing.T) {
	s := newStore(t, Options{})
	const n = 32
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		leases, recs := storetest.RaceAcquire(t, s, key, n)
		if len(leases) != 1 {
			t.Fatalf("%s: %d leases from %d concurrent Acquires, want 1", key, len(leases), n)
		}
		for _, rec := range recs {
			if rec.Status != idem.StatusInProgress || rec.Token != leases[0].Token {
				t.Fatalf("%s: loser saw %+v, want the winner's record (token %d)", key, rec, leases[0].Token)
			}
		}
	}
}

func TestConcurrentTakeOverGrantsOneLease(t *testing.T) {
	s := newStore(t, Options{})
	const n = 32
	for i := range 5 {
		key := fmt.Sprintf("k%d", i)
		old := mustAcquire(t, s, key, fp("a"), 20*time.Millisecond)
		time.Sleep(40 * time.Millisecond)
		leases, recs := storetest.RaceAcquire(t, s, key, n)
		if len(leases) != 1 {
			t.Fatalf("%s: %d take-overs from %d concurrent Acquires, want 1", key, len(leases), n)
		}
		if l := leases[0]; l.PrevToken != old.Token || l.Token <= old.Token {
			t.Fatalf("%s: take-over %+v, want PrevToken %d", key, l, old.Token)
		}
		for _, rec := range recs {
			if rec.Token != leases[0].Token {
				t.Fatalf("%s: loser saw token %d, want %d", key, rec.Token, leases[0].Token)
			}
		}
	}
}

// TestConcurrentChurnKeepsOneHolder runs claims, releases and completions on
// a few keys from many goroutines and checks that at no time do two
// goroutines both believe they hold a key: every Complete by a holder that
// was not superseded succeeds, and tokens per key only go up.
func TestConcurrentChurnKeepsOneHolder(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	const workers, rounds, keys = 16, 40, 3
	var (
		mu      sync.Mutex
		holding = map[string]idem.Token{}
		last    = map[string]idem.Token{}
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				key := fmt.Sprintf("k%d", (w+r)%keys)
				l, _, err := s.Acquire(ctx, key, fp("a"), time.Minute)
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				if l == nil {
					continue
				}
				mu.Lock()
				if h, ok := holding[key]; ok {
					t.Errorf("%s: token %d acquired while %d holds it", key, l.Token, h)
				}
				if l.Token <= last[key] {
					t.Errorf("%s: token %d after %d", key, l.Token, last[key])
				}
				holding[key], last[key] = l.Token, l.Token
				mu.Unlock()
				mu.Lock()
				delete(holding, key)
				mu.Unlock()
				if r%5 == 0 {
					err = s.Complete(ctx, l, resp("x"), time.Microsecond) // absent almost at once
				} else {
					err = s.Release(ctx, l)
				}
				if err != nil {
					t.Errorf("%s: finishing token %d: %v", key, l.Token, err)
				}
			}
		})
	}
	wg.Wait()
}

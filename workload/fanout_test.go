package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFanOut: every index is called once, by one of at most workers
// goroutines; once ctx ends no index is handed out and FanOut says why.
func TestFanOut(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	running, most := 0, 0
	err := FanOut(context.Background(), 100, 4, func(w, i int) {
		mu.Lock()
		running++
		most = max(most, running)
		seen[i]++
		if w < 0 || w >= 4 {
			t.Errorf("call %d by worker %d of 4", i, w)
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if seen[i] != 1 {
			t.Errorf("index %d called %d times", i, seen[i])
		}
	}
	if most > 4 {
		t.Errorf("%d calls at once, want at most 4", most)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	err = FanOut(ctx, 100, 2, func(_, _ int) {
		if calls.Add(1) == 1 {
			cancel()
		}
	})
	if err != context.Canceled {
		t.Errorf("FanOut after cancel = %v, want context.Canceled", err)
	}
	if n := calls.Load(); n > 3 {
		t.Errorf("%d calls after the first cancelled ctx, want at most 3", n)
	}

	// No workers asked for: one does the work rather than none (which
	// would leave the feed blocked for ever).
	n := 0
	if err := FanOut(context.Background(), 5, 0, func(w, _ int) {
		if w != 0 {
			t.Errorf("worker %d, want 0", w)
		}
		n++
	}); err != nil || n != 5 {
		t.Errorf("FanOut with 0 workers: %d calls, %v; want 5, nil", n, err)
	}
}

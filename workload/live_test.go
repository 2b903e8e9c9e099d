package workload

import (
	"math"
	"sync"
	"testing"
	"time"
)

// TestLiveBuckets: every latency lands in a bucket whose bounds contain it,
// buckets are in order, and a bucket is at most 12.5% wide.
func TestLiveBuckets(t *testing.T) {
	prev := -1
	for _, us := range []uint64{0, 1, 7, 8, 9, 15, 16, 17, 100, 999, 1000, 1 << 20, 123456789, 1<<63 - 1, 1<<64 - 1} {
		i := liveBucket(us)
		if i < 0 || i >= liveBuckets {
			t.Fatalf("liveBucket(%d) = %d, out of range", us, i)
		}
		if i < prev {
			t.Fatalf("liveBucket(%d) = %d, below the bucket of a smaller latency (%d)", us, i, prev)
		}
		prev = i
		lower := uint64(0)
		if i > 0 {
			lower = liveUpper(i - 1)
		}
		upper := liveUpper(i)
		if i == liveBuckets-1 {
			upper = 0 // wraps: the last bucket ends at 2^64
		}
		if us < lower || (upper != 0 && us >= upper) {
			t.Fatalf("%d µs in bucket %d = [%d, %d)", us, i, lower, upper)
		}
		if lower >= 8 && upper != 0 && float64(upper-lower) > 0.125*float64(lower) {
			t.Fatalf("bucket %d = [%d, %d) is wider than 12.5%%", i, lower, upper)
		}
	}
}

// TestLiveLatencyTake: the quantile of a known distribution, observed from
// several goroutines, is within a bucket of the truth, and Take empties.
func TestLiveLatencyTake(t *testing.T) {
	var l LiveLatency
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			// 990 calls of 1 ms and 10 of 50 ms per goroutine: 1% slow.
			for i := range 1000 {
				d := time.Millisecond
				if i%100 == g { // spread the slow ones
					d = 50 * time.Millisecond
				}
				l.Observe(d)
			}
		})
	}
	wg.Wait()
	n, p99 := l.Take(0.99)
	if n != 4000 {
		t.Fatalf("Take counted %d calls, want 4000", n)
	}
	if !near(p99, time.Millisecond) {
		t.Fatalf("p99 = %v, want 1 ms to within 6.25%% (the 40 slow calls are exactly the top 1%%)", p99)
	}
	if _, p999 := func() (uint64, time.Duration) {
		for range 4 {
			l.Observe(time.Millisecond)
		}
		l.Observe(50 * time.Millisecond)
		return l.Take(0.999)
	}(); !near(p999, 50*time.Millisecond) {
		t.Fatalf("p99.9 of 5 calls with one slow = %v, want about 50 ms", p999)
	}
	if n, q := l.Take(0.99); n != 0 || q != 0 {
		t.Fatalf("Take after Take = %d, %v; want an empty window", n, q)
	}
	l.Observe(-time.Second)
	if n, q := l.Take(0.5); n != 1 || q != 0 {
		t.Fatalf("a negative latency = %d calls, %v; want one call in the first bucket (0 µs)", n, q)
	}
}

// near reports whether got is within 6.25% of want.
func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= 0.0625*float64(want)
}

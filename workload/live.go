package workload

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// liveSub is the number of sub-buckets per power of two of a LiveLatency:
// 8 keeps every bucket within 12.5% of its lower bound.
const (
	liveSubBits = 3
	liveSub     = 1 << liveSubBits
	liveBuckets = liveSub + (64-liveSubBits)*liveSub
)

// LiveLatency is a histogram of call latencies that clients add to while
// the run goes and a progress display drains: Observe is one atomic add,
// safe from any number of goroutines, and Take returns what was observed
// since the last Take. Buckets are microseconds on a log scale with 8
// sub-buckets per power of two, so a percentile is exact to within 6.25%;
// the reports compute exact figures from the history after the run. The
// zero value is ready to use.
type LiveLatency struct {
	counts [liveBuckets]atomic.Uint64
}

// liveBucket returns the bucket of a latency of us microseconds.
func liveBucket(us uint64) int {
	if us < liveSub {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us >= 2^e, e >= liveSubBits
	sub := (us >> (e - liveSubBits)) & (liveSub - 1)
	return liveSub + (e-liveSubBits)*liveSub + int(sub)
}

// liveUpper returns the exclusive upper bound of bucket i in microseconds.
func liveUpper(i int) uint64 {
	if i < liveSub {
		return uint64(i) + 1
	}
	e := (i-liveSub)/liveSub + liveSubBits
	sub := uint64((i - liveSub) % liveSub)
	return (liveSub + sub + 1) << (e - liveSubBits)
}

// Observe adds one call of latency d (negative counts as zero).
func (l *LiveLatency) Observe(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64(d / time.Microsecond)
	}
	l.counts[liveBucket(us)].Add(1)
}

// Take empties the histogram and returns how many calls it held and their
// q-quantile (0 < q ≤ 1), given as the middle of the bucket holding it, so
// within 6.25% of the truth; zero when it held none. Calls observed while
// Take runs land in this window or the next, never in neither.
func (l *LiveLatency) Take(q float64) (n uint64, quantile time.Duration) {
	var snap [liveBuckets]uint64
	for i := range l.counts {
		snap[i] = l.counts[i].Swap(0)
		n += snap[i]
	}
	if n == 0 {
		return 0, 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(1, min(rank, n))
	var seen uint64
	for i, c := range snap {
		if seen += c; seen >= rank {
			lower := uint64(0)
			if i > 0 {
				lower = liveUpper(i - 1)
			}
			return n, time.Duration(lower+(liveUpper(i)-lower)/2) * time.Microsecond
		}
	}
	panic("unreachable: rank <= n")
}

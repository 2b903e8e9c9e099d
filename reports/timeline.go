package reports

import (
	"slices"
	"time"
)

// DefaultBucket is the width of a timeline bucket when
// MeasureOptions.Bucket is zero.
const DefaultBucket = time.Second

// MaxBuckets bounds the length of a timeline; a longer run gets wider
// buckets.
const MaxBuckets = 100_000

// MaxScatterPoints bounds Measurement.Scatter.
const MaxScatterPoints = 20_000

// Timeline is the run cut into buckets of equal width, bucket i covering
// [Origin + i*Bucket, Origin + (i+1)*Bucket). A call counts as completed in
// the bucket of its Return, as an error in the bucket of its end (Return,
// or Call when it never returned), and its latency in the bucket of its
// start (Intended when set, else Call), so a stall shows where requests
// were due. All slices have the same length; a run without calls or faults
// has none.
type Timeline struct {
	// Bucket is the width of a bucket.
	Bucket time.Duration
	// Span is the length of the timeline, from the origin to the latest
	// end of a call or fault; the last bucket may be partly empty.
	Span time.Duration
	// Completed counts calls that returned in each bucket.
	Completed []int
	// Errors counts calls with an error outcome (see IsError) ending in
	// each bucket.
	Errors []int
	// Unreturned counts calls that never returned (Return == NoReturn),
	// by the bucket of their Call.
	Unreturned []int
	// Measured counts measured calls that started in each bucket; P50,
	// P99 and Max are exact percentiles of their latencies, 0 where
	// Measured is 0.
	Measured      []int
	P50, P99, Max []time.Duration
}

// Len returns the number of buckets.
func (t *Timeline) Len() int { return len(t.Completed) }

// Rate returns the completed calls per second of bucket i.
func (t *Timeline) Rate(i int) float64 { return perSecond(t.Completed[i], t.Bucket) }

// ErrorRate returns the errors per second of bucket i.
func (t *Timeline) ErrorRate(i int) float64 { return perSecond(t.Errors[i], t.Bucket) }

// LatencyPoint is one measured call: when it started, in seconds since the
// run's origin, and its latency.
type LatencyPoint struct {
	T       float64
	Latency time.Duration
}

// bucketing returns the bucket width and count for a run spanning span ns:
// width is widened by a whole factor when more than MaxBuckets would be
// needed. A run with nothing on its timeline has no buckets.
func bucketing(width time.Duration, span int64, any bool) (int64, int) {
	w := int64(width)
	if !any {
		return w, 0
	}
	n := span/w + 1
	if n > MaxBuckets {
		w *= (n + MaxBuckets - 1) / MaxBuckets
		n = span/w + 1
	}
	return w, int(n)
}

// percentiles groups the shards' latencies by bucket with a counting sort
// and fills Measured, P50, P99 and Max.
func (t *Timeline) percentiles(shards []shard, total, buckets int) {
	t.Measured = make([]int, buckets)
	t.P50 = make([]time.Duration, buckets)
	t.P99 = make([]time.Duration, buckets)
	t.Max = make([]time.Duration, buckets)
	for i := range shards {
		for _, l := range shards[i].latencies {
			t.Measured[l.bucket]++
		}
	}
	next := make([]int, buckets)
	off := 0
	for b, n := range t.Measured {
		next[b] = off
		off += n
	}
	all := make([]int64, total)
	for i := range shards {
		for _, l := range shards[i].latencies {
			all[next[l.bucket]] = l.ns
			next[l.bucket]++
		}
		shards[i].latencies = nil
	}
	off = 0
	for b, n := range t.Measured {
		if n == 0 {
			continue
		}
		v := all[off : off+n]
		off += n
		slices.Sort(v)
		t.P50[b] = durationOf(exactPercentile(v, 50))
		t.P99[b] = durationOf(exactPercentile(v, 99))
		t.Max[b] = durationOf(max(v[n-1], 0))
	}
}

// exactPercentile returns the nearest-rank percentile pct (a whole number
// from 1 to 100) of the sorted, non-empty v: the smallest value with at
// least pct% of v at or below it.
func exactPercentile(v []int64, pct int) int64 {
	rank := (pct*len(v) + 99) / 100
	rank = max(1, min(rank, len(v)))
	return max(v[rank-1], 0)
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }

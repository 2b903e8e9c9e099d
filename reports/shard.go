package reports

import (
	"cmp"
	"slices"

	"github.com/idembench/idembench/history"
)

// shardConfig is what every shard of Measure shares, read-only.
type shardConfig struct {
	spans   []span // merged fault windows
	origin  int64
	slack   int64
	stride  uint64 // a call goes to the scatter sample with probability 1/stride
	bucket  int64
	buckets int
}

// bucketOf returns the timeline bucket of instant t, clamped to the
// timeline.
func (c *shardConfig) bucketOf(t int64) int {
	b := (t - c.origin) / c.bucket
	return int(max(0, min(b, int64(c.buckets-1))))
}

// bucketLatency is one measured latency and the bucket of its call's start.
type bucketLatency struct {
	bucket int32
	ns     int64
}

// shard is the private state of one Measure goroutine: its own histograms
// and counters over a contiguous range of ops.
type shard struct {
	calls, probes, effects, faults int
	completed, successes, errors   int
	openLoop, late                 int
	maxDelay                       int64

	overall   Latency
	byOutcome [maxOutcome]Latency
	byPhase   [numPhases]Latency

	completedAt, errorsAt, unreturnedAt []int
	latencies                           []bucketLatency
	scatter                             []LatencyPoint
}

// measure accounts for ops[lo:hi].
func (s *shard) measure(ops []history.Op, lo, hi int, c *shardConfig) {
	if c.buckets > 0 {
		s.completedAt = make([]int, c.buckets)
		s.errorsAt = make([]int, c.buckets)
		s.unreturnedAt = make([]int, c.buckets)
	}
	s.latencies = make([]bucketLatency, 0, hi-lo)
	for i := lo; i < hi; i++ {
		op := &ops[i]
		switch op.Kind {
		case history.KindEffect:
			s.effects++
			continue
		case history.KindFault:
			s.faults++
			continue
		case history.KindCall:
		default:
			continue
		}
		if op.Probe {
			s.probes++
			continue
		}
		s.calls++
		if op.Intended != 0 {
			s.openLoop++
			d := op.Call - op.Intended
			if d > c.slack {
				s.late++
			}
			s.maxDelay = max(s.maxDelay, d)
		}
		start, end := callSpan(op)
		o := op.Outcome
		if int(o) >= maxOutcome {
			o = history.OutcomeNone
		}
		ph := phaseOf(c.spans, start, end)
		s.overall.Calls++
		s.byOutcome[o].Calls++
		s.byPhase[ph].Calls++
		if o.Success() {
			s.successes++
		}
		if IsError(o) {
			s.errors++
			s.errorsAt[c.bucketOf(end)]++
		}
		if op.Return == history.NoReturn {
			s.unreturnedAt[c.bucketOf(op.Call)]++
			continue
		}
		s.completed++
		s.completedAt[c.bucketOf(op.Return)]++
		lat := op.Return - start
		s.overall.record(lat)
		s.byOutcome[o].record(lat)
		s.byPhase[ph].record(lat)
		s.latencies = append(s.latencies, bucketLatency{int32(c.bucketOf(start)), lat})
		if sampled(i, c.stride) {
			s.scatter = append(s.scatter, LatencyPoint{T: seconds(start - c.origin), Latency: durationOf(max(lat, 0))})
		}
	}
}

// sampled picks about one op index in stride, by a hash of the index rather
// than its remainder, so a history whose calls and effects alternate
// regularly is not sampled all calls or none.
func sampled(i int, stride uint64) bool {
	if stride <= 1 {
		return true
	}
	z := uint64(i) + 0x9e3779b97f4a7c15 // splitmix64 finalizer
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return (z^z>>31)%stride == 0
}

// thin keeps at most n of pts, evenly spaced, in order.
func thin(pts []LatencyPoint, n int) []LatencyPoint {
	if len(pts) <= n {
		return pts
	}
	out := make([]LatencyPoint, n)
	for k := range n {
		out[k] = pts[k*len(pts)/n]
	}
	return out
}

// fold merges the shards into m and computes the timeline.
func (m *Measurement) fold(shards []shard, c *shardConfig) {
	tl := &m.Timeline
	tl.Bucket = durationOf(c.bucket)
	tl.Completed = make([]int, c.buckets)
	tl.Errors = make([]int, c.buckets)
	tl.Unreturned = make([]int, c.buckets)
	nlat := 0
	for i := range shards {
		s := &shards[i]
		m.Calls += s.calls
		m.Probes += s.probes
		m.Effects += s.effects
		m.Faults += s.faults
		m.Completed += s.completed
		m.Successes += s.successes
		m.Errors += s.errors
		m.OpenLoop += s.openLoop
		m.LateSends += s.late
		m.MaxSendDelay = max(m.MaxSendDelay, durationOf(s.maxDelay))
		m.Overall.merge(&s.overall)
		for o := range s.byOutcome {
			m.byOutcome[o].merge(&s.byOutcome[o])
		}
		for p := range s.byPhase {
			m.byPhase[p].merge(&s.byPhase[p])
		}
		for b := range c.buckets {
			tl.Completed[b] += s.completedAt[b]
			tl.Errors[b] += s.errorsAt[b]
			tl.Unreturned[b] += s.unreturnedAt[b]
		}
		nlat += len(s.latencies)
		m.Scatter = append(m.Scatter, s.scatter...)
	}
	slices.SortStableFunc(m.Scatter, func(a, b LatencyPoint) int { return cmp.Compare(a.T, b.T) })
	m.Scatter = thin(m.Scatter, MaxScatterPoints)
	tl.percentiles(shards, nlat, c.buckets)
}

package reports

import (
	"runtime"
	"sync"
	"time"

	"github.com/idembench/idembench/history"
)

// DefaultLateSlack is the MeasureOptions.LateSlack used when it is zero.
const DefaultLateSlack = time.Millisecond

// MeasureOptions tunes Measure. The zero value is ready to use.
type MeasureOptions struct {
	// LateSlack is how late an open-loop call may be sent before it counts
	// as a late send (Call - Intended > LateSlack). Zero means
	// DefaultLateSlack; a negative value counts every call sent after its
	// intended time.
	LateSlack time.Duration
	// Bucket is the width of the timeline buckets. Zero means
	// DefaultBucket. It is widened to a multiple of itself when the run
	// would need more than MaxBuckets buckets.
	Bucket time.Duration
}

func (o MeasureOptions) withDefaults() MeasureOptions {
	switch {
	case o.LateSlack == 0:
		o.LateSlack = DefaultLateSlack
	case o.LateSlack < 0:
		o.LateSlack = 0
	}
	if o.Bucket <= 0 {
		o.Bucket = DefaultBucket
	}
	return o
}

// Outcomes lists every call outcome in report order.
var Outcomes = []history.Outcome{
	history.Executed, history.Replayed, history.Failed, history.InProgress, history.Mismatch,
	history.Released, history.LeaseLost, history.Unknown, history.Error,
}

// maxOutcome bounds the outcome-indexed arrays; history.Validate rejects
// larger values, and Measure files any that slip through under none.
const maxOutcome = 16

// IsError reports whether a call outcome counts as an error: the client got
// no final answer and must retry or stays in doubt. These are in_progress,
// released, lease_lost, unknown and error. A stored permanent failure
// (failed) and a fingerprint mismatch are final answers, not errors.
func IsError(o history.Outcome) bool {
	switch o {
	case history.InProgress, history.Released, history.LeaseLost, history.Unknown, history.Error:
		return true
	}
	return false
}

// Measurement is what Measure found in a history: latency distributions
// overall, per outcome and per phase, late sends, throughput and errors
// over time, and the fault windows. Only workload calls are measured:
// liveness probes, effects and faults are counted and otherwise left out.
type Measurement struct {
	// Header is the measured history's header.
	Header history.Header
	// Origin is the timeline instant (ns) of second 0 of the timeline and
	// the plots: the earliest start of a call or fault.
	Origin int64
	// Duration is the span of the workload: from the first call's start
	// (Intended when set, else Call) to the last call's end (Return, or
	// Call for a call that never returned). Zero without calls.
	Duration time.Duration
	// TrafficEndS is when new requests stopped, in seconds since Origin:
	// the first call's start plus the traffic duration the history header
	// records (option "duration"), or, without it, the start of the last
	// first attempt (Attempt 0 or 1). What follows, up to the end of the
	// timeline, is the drain: retries and calls still running. The plots
	// shade it. Zero without calls.
	TrafficEndS float64

	// Calls counts workload calls (KindCall without Probe); Probes,
	// Effects and Faults count the other ops.
	Calls, Probes, Effects, Faults int
	// Completed counts calls whose Return is known (any outcome).
	Completed int
	// Successes counts executed and replayed calls.
	Successes int
	// Errors counts calls whose outcome IsError.
	Errors int

	// OpenLoop counts calls with an Intended send time.
	OpenLoop int
	// LateSends counts open-loop calls sent more than LateSlack after
	// their Intended time; MaxSendDelay is the largest Call - Intended.
	LateSends    int
	MaxSendDelay time.Duration
	LateSlack    time.Duration

	// Overall is the latency of every call.
	Overall Latency
	// Windows are the fault windows, sorted by start.
	Windows []FaultWindow
	// Timeline holds the per-bucket series.
	Timeline Timeline
	// Scatter is a deterministic sample of at most MaxScatterPoints
	// measured calls, sorted by start, for latency-over-time plots.
	Scatter []LatencyPoint

	byOutcome [maxOutcome]Latency
	byPhase   [numPhases]Latency
}

// ByOutcome returns the latency of the calls with outcome o; an empty
// Latency for an outcome no call had.
func (m *Measurement) ByOutcome(o history.Outcome) *Latency {
	if int(o) >= maxOutcome {
		return &Latency{}
	}
	return &m.byOutcome[o]
}

// ByPhase returns the latency of the calls in phase p; an empty Latency
// for an invalid phase.
func (m *Measurement) ByPhase(p Phase) *Latency {
	if p >= numPhases {
		return &Latency{}
	}
	return &m.byPhase[p]
}

// Throughput returns completed calls per second over Duration; 0 when
// Duration is 0.
func (m *Measurement) Throughput() float64 { return perSecond(m.Completed, m.Duration) }

// SuccessThroughput returns executed and replayed calls per second over
// Duration; 0 when Duration is 0.
func (m *Measurement) SuccessThroughput() float64 { return perSecond(m.Successes, m.Duration) }

// ErrorRate returns Errors / Calls, between 0 and 1; 0 without calls.
func (m *Measurement) ErrorRate() float64 {
	if m.Calls == 0 {
		return 0
	}
	return float64(m.Errors) / float64(m.Calls)
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Measure reads h once and returns its Measurement. It runs in parallel on
// large histories: each goroutine fills its own HDR histograms over a range
// of ops and they are merged, which is exact, so the figures do not depend
// on the split. A nil or empty history gives an empty Measurement.
//
// Latency is Return - Intended for open-loop calls (Intended != 0), so a
// stalled driver cannot hide its own delay (no coordinated omission), and
// Return - Call otherwise. Calls whose Return is NoReturn are counted in
// Calls, in their outcome and phase, and in Errors when their outcome is
// one, but have no latency; for phase and timeline purposes they end at
// their Call. An unknown call that did record a Return (a client timeout
// that fired) is measured: the client really waited that long.
func Measure(h *history.History, opts MeasureOptions) *Measurement {
	opts = opts.withDefaults()
	m := &Measurement{LateSlack: opts.LateSlack}
	if h == nil {
		m.Timeline.Bucket = opts.Bucket
		return m
	}
	m.Header = h.Header
	ops := h.Ops
	sc := scan(ops)
	m.Origin = sc.origin
	m.Duration = time.Duration(sc.lastCallEnd - sc.firstCallStart)
	m.TrafficEndS = trafficEnd(&h.Header, &sc)
	m.Windows = faultWindows(ops, sc.end)
	for i := range m.Windows {
		w := &m.Windows[i]
		w.StartS = seconds(w.Start - m.Origin)
		w.EndS = seconds(w.End - m.Origin)
	}
	cfg := shardConfig{
		spans:  faultSpans(m.Windows),
		origin: sc.origin,
		slack:  int64(opts.LateSlack),
		stride: uint64(max(1, (sc.calls+MaxScatterPoints-1)/MaxScatterPoints)),
	}
	cfg.bucket, cfg.buckets = bucketing(opts.Bucket, sc.end-sc.origin, sc.calls+sc.faults > 0)

	n := shardCount(len(ops))
	shards := make([]shard, n)
	var wg sync.WaitGroup
	for s := range shards {
		lo, hi := s*len(ops)/n, (s+1)*len(ops)/n
		wg.Go(func() { shards[s].measure(ops, lo, hi, &cfg) })
	}
	wg.Wait()
	m.fold(shards, &cfg)
	m.Timeline.Span = time.Duration(sc.end - sc.origin)
	return m
}

// extent is what the first, sequential pass over the ops finds.
type extent struct {
	origin, end                 int64
	firstCallStart, lastCallEnd int64
	lastFirstStart              int64 // latest start of a first attempt
	calls, faults               int
}

// trafficEnd returns Measurement.TrafficEndS.
func trafficEnd(hd *history.Header, e *extent) float64 {
	if e.calls == 0 {
		return 0
	}
	end := e.lastFirstStart
	if d, err := time.ParseDuration(hd.Options["duration"]); err == nil && d > 0 {
		end = e.firstCallStart + int64(d)
	}
	return seconds(min(max(end, e.origin), e.end) - e.origin)
}

// scan finds the run's time extent: origin is the earliest start of a call
// or fault, end the latest known end of either.
func scan(ops []history.Op) extent {
	var e extent
	first := true
	see := func(start, end int64) {
		if first {
			e.origin, e.end, first = start, end, false
			return
		}
		e.origin = min(e.origin, start)
		e.end = max(e.end, end)
	}
	for i := range ops {
		op := &ops[i]
		switch {
		case op.Kind == history.KindCall && !op.Probe:
			start, end := callSpan(op)
			if e.calls == 0 {
				e.firstCallStart, e.lastCallEnd, e.lastFirstStart = start, end, start
			}
			e.firstCallStart = min(e.firstCallStart, start)
			e.lastCallEnd = max(e.lastCallEnd, end)
			if op.Attempt <= 1 {
				e.lastFirstStart = max(e.lastFirstStart, start)
			}
			e.calls++
			see(start, end)
		case op.Kind == history.KindFault:
			end := op.Call
			if op.Return != history.NoReturn {
				end = op.Return
			}
			e.faults++
			see(op.Call, end)
		}
	}
	return e
}

// callSpan returns when a call started (Intended when set) and ended
// (Return, or Call when it never returned).
func callSpan(op *history.Op) (start, end int64) {
	start, end = op.Call, op.Return
	if op.Intended != 0 {
		start = op.Intended
	}
	if end == history.NoReturn {
		end = op.Call
	}
	return start, max(start, end)
}

// shardLimit caps the goroutines of Measure; tests lower it to compare a
// split measurement with a single one.
var shardLimit = 16

// shardCount splits large histories across GOMAXPROCS goroutines, at most
// shardLimit, with at least 64k ops each.
func shardCount(ops int) int {
	return max(1, min(runtime.GOMAXPROCS(0), ops>>16, shardLimit))
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

package reports

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idembench/idembench/history"
)

// CallLatency returns the latency Measure records for op, in nanoseconds:
// from its intended send time (its call when it has none) to its return.
// ok is false for an op Measure records no latency for: not a call, a
// probe, or a call that never returned.
func CallLatency(op *history.Op) (ns int64, ok bool) {
	if op.Kind != history.KindCall || op.Probe || op.Return == history.NoReturn {
		return 0, false
	}
	start, end := callSpan(op)
	return end - start, true
}

// CallsLatency returns the latency of ops' calls, probes left out, as
// Measure's Overall has it: Calls counts them, returned or not.
func CallsLatency(ops []history.Op) *Latency {
	l := &Latency{}
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.KindCall || op.Probe {
			continue
		}
		l.Calls++
		if ns, ok := CallLatency(op); ok {
			l.record(ns)
		}
	}
	return l
}

// LatencyWire is a Latency as one process sends it to another (the
// workers of a multi-process or multi-host run, to their coordinator):
// the HDR histogram in its compressed V2 encoding and the exact figures
// beside it. Merging wires (AddWire) is exact: the merged histogram is
// the one a single process recording every latency would hold.
type LatencyWire struct {
	Calls    int
	Hist     []byte // empty when nothing was measured
	Min, Max int64
	Sum      float64
}

// Wire returns l in its wire form.
func (l *Latency) Wire() (LatencyWire, error) {
	w := LatencyWire{Calls: l.Calls, Min: l.min, Max: l.max, Sum: l.sum}
	if l.Hist == nil {
		return w, nil
	}
	b, err := l.Hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return w, fmt.Errorf("reports: encode a latency histogram: %w", err)
	}
	w.Hist = b
	return w, nil
}

// AddWire merges w into l, exactly. A histogram that does not decode, or
// whose range or precision differs from this package's, is an error and
// leaves l unchanged.
func (l *Latency) AddWire(w LatencyWire) error {
	o := &Latency{Calls: w.Calls, min: w.Min, max: w.Max, sum: w.Sum}
	if len(w.Hist) > 0 {
		h, err := hdrhistogram.Decode(w.Hist)
		if err != nil {
			return fmt.Errorf("reports: decode a latency histogram: %w", err)
		}
		ref := newHistogram()
		if h.LowestTrackableValue() != ref.LowestTrackableValue() || h.HighestTrackableValue() != ref.HighestTrackableValue() ||
			h.SignificantFigures() != ref.SignificantFigures() {
			return fmt.Errorf("reports: a latency histogram of range [%d, %d] and %d digits, want [%d, %d] and %d",
				h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(),
				ref.LowestTrackableValue(), ref.HighestTrackableValue(), ref.SignificantFigures())
		}
		o.Hist = h
	}
	l.merge(o)
	return nil
}

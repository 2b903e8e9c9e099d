package reports

import (
	"cmp"
	"slices"
	"sort"
	"strconv"

	"github.com/idembench/idembench/history"
)

// Phase places a call relative to the run's fault windows.
type Phase uint8

// The phases. A run without fault windows has every call in PhaseBefore.
const (
	// PhaseBefore: the call ended before the first fault window opened.
	PhaseBefore Phase = iota
	// PhaseDuring: the call's interval overlaps a fault window.
	PhaseDuring
	// PhaseAfter: the call started after a fault window closed and
	// overlaps none (calls between two windows are "after" the first).
	PhaseAfter
	numPhases
)

// Phases lists every phase in report order.
var Phases = []Phase{PhaseBefore, PhaseDuring, PhaseAfter}

var phaseNames = [...]string{PhaseBefore: "before", PhaseDuring: "during", PhaseAfter: "after"}

// String returns "before", "during" or "after"; "phase(N)" for an invalid
// value.
func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// FaultWindow is one fault of the run: a KindFault op's Call..Return on the
// run's timeline, also given in seconds since Measurement.Origin for plots.
type FaultWindow struct {
	// Start and End are timeline nanoseconds. A fault that never healed
	// (Return == NoReturn) ends at the end of the run.
	Start, End int64
	// StartS and EndS are Start and End in seconds since the run's origin.
	StartS, EndS float64
	// Kind is what the fault did (the fault op's Fault); empty in a
	// history written before fault ops carried their kind.
	Kind history.FaultKind
	// Label is the fault op's Label ("pause client 3").
	Label string
	// Client is the client the fault targets, or -1 for none.
	Client int
}

// span is a closed interval of the timeline.
type span struct{ start, end int64 }

// faultSpans returns the union of the windows as sorted, disjoint spans.
func faultSpans(ws []FaultWindow) []span {
	out := make([]span, 0, len(ws))
	for _, w := range ws {
		out = append(out, span{w.Start, w.End})
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// phaseOf classifies the interval [start, end] against the sorted, disjoint
// fault spans in O(log n).
func phaseOf(spans []span, start, end int64) Phase {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end >= start })
	if i < len(spans) && spans[i].start <= end {
		return PhaseDuring
	}
	if i > 0 {
		return PhaseAfter
	}
	return PhaseBefore
}

// faultWindows collects the KindFault ops of ops, sorted by Start; a window
// without an end closes at runEnd.
func faultWindows(ops []history.Op, runEnd int64) []FaultWindow {
	var ws []FaultWindow
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.KindFault {
			continue
		}
		end := op.Return
		if end == history.NoReturn {
			end = max(runEnd, op.Call)
		}
		ws = append(ws, FaultWindow{Start: op.Call, End: end, Kind: op.Fault, Label: op.Label, Client: op.Client})
	}
	slices.SortStableFunc(ws, func(a, b FaultWindow) int { return cmp.Compare(a.Start, b.Start) })
	return ws
}

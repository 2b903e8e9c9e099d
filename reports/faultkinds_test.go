package reports

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/history"
)

// TestFaultKindsCounted: the summary counts the faults by kind and keeps
// each window's kind; a fault of an old history, without a kind, counts
// as "other".
func TestFaultKindsCounted(t *testing.T) {
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindCall, Key: "k", Call: synthBase, Return: synthBase + 10, Outcome: history.Executed, Resp: "r"},
		history.Fault(history.FaultCrash, "crash at after-fn", synthBase+1, synthBase+1),
		history.Fault(history.FaultPause, "pause 1s at before-fn", synthBase+2, synthBase+5),
		history.Fault(history.FaultCrash, "crash at after-fn", synthBase+3, synthBase+3),
		{Kind: history.KindFault, Client: -1, Worker: -1, Call: synthBase + 4, Return: synthBase + 6, Label: "net partition"},
	}}
	s := NewSummary(Measure(h, MeasureOptions{}), nil, Options{})
	if d := cmp.Diff(map[string]int{"crash": 2, "pause": 1}, s.Counts.FaultKinds); d != "" || s.Counts.Faults != 4 {
		t.Errorf("faults %d, by kind (-want +got):\n%s", s.Counts.Faults, d)
	}
	if got, want := s.Counts.FaultsByKind(), "crash 2, pause 1, other 1"; got != want {
		t.Errorf("FaultsByKind() = %q, want %q", got, want)
	}
	var kinds []string
	for _, w := range s.FaultWindows {
		kinds = append(kinds, w.Kind)
	}
	if d := cmp.Diff([]string{"crash", "pause", "crash", ""}, kinds); d != "" {
		t.Errorf("window kinds (-want +got):\n%s", d)
	}
	if got := (Counts{}).FaultsByKind(); got != "" {
		t.Errorf("no faults: %q", got)
	}
}

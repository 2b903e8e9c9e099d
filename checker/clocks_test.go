package checker_test

import (
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// TestClockBoundsWidenIntervals: two hosts whose clocks disagree. Worker
// 0's clock runs 50 ms ahead of worker 1's, and its offset was measured
// to within 60 ms only: its execution of pay-1 (true time 0–30 ms) is
// recorded at 50–80 ms, and worker 1's replay of that answer (true time
// 35–38 ms) seems to end before the execution began. Checked as one clock,
// that is a false violation; with the measured bounds in the header the
// intervals are widened and the history passes, with a note saying what
// the widening cannot see.
func TestClockBoundsWidenIntervals(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindCall, Client: 0, Key: "pay-1", FP: "f", Call: ms(50), Return: ms(80),
			Outcome: history.Executed, Token: 1, Resp: "9f2c", Exec: "x1"},
		{Kind: history.KindEffect, Client: 0, Key: "pay-1", Exec: "x1", Call: ms(60), Return: ms(61), Token: 1, Applied: true},
		{Kind: history.KindCall, Client: 100, Key: "pay-1", FP: "f", Call: ms(35), Return: ms(38),
			Outcome: history.Replayed, Resp: "9f2c"},
		{Kind: history.KindCall, Client: 100, Key: "pay-1", FP: "f", Call: ms(200), Return: ms(201),
			Outcome: history.Replayed, Resp: "9f2c", Probe: true},
	}}
	rep := checker.Check(h, checker.Options{})
	if rep.Verdict != checker.VerdictViolation {
		t.Fatalf("one clock: verdict %s, want the (false) violation a skewed history gives", rep.Verdict)
	}
	h.Header.Clocks = []history.ClockBound{
		{Worker: 0, ClientLo: 0, ClientHi: 64, Offset: -50 * time.Millisecond, Bound: 60 * time.Millisecond},
		{Worker: 1, ClientLo: 100, ClientHi: 164, Bound: 100 * time.Microsecond},
	}
	rep = checker.Check(h, checker.Options{})
	if rep.Verdict != checker.VerdictOK {
		t.Fatalf("with the clock bounds: verdict %s, violations %v; want ok", rep.Verdict, rep.Violations)
	}
	if len(rep.Notes) == 0 {
		t.Error("no note says the intervals were widened")
	}
	// The widening is the checker's view only: the history is unchanged.
	if h.Ops[0].Call != ms(50) || h.Ops[2].Return != ms(38) {
		t.Error("Check changed the history's ops")
	}
	// A negative bound is refused as an invalid history.
	h.Header.Clocks[1].Bound = -time.Millisecond
	if err := h.Validate(); err == nil {
		t.Error("a negative clock bound passed Validate")
	}
}

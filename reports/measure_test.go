package reports

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms1 = int64(time.Millisecond)

// closedLoop returns a history of n calls, one per millisecond, the i-th
// (from 1) taking lat(i).
func closedLoop(n int, lat func(i int) time.Duration) *history.History {
	h := &history.History{}
	for i := 1; i <= n; i++ {
		call := synthBase + int64(i)*ms1
		h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Client: i % 8, Key: "k", Call: call,
			Return: call + int64(lat(i)), Outcome: history.Replayed, Resp: "r"})
	}
	return h
}

// within reports whether got is at or above want and at most 0.1% above
// (HDR rounds up to the highest equivalent value).
func within(got, want time.Duration) bool {
	return got >= want && float64(got-want) <= 0.001*float64(want)+1
}

func TestPercentilesOfKnownLatencies(t *testing.T) {
	// Latencies 1 µs, 2 µs, ... 10,000 µs: the p-th percentile is p% of 10 ms.
	m := Measure(closedLoop(10_000, func(i int) time.Duration { return time.Duration(i) * time.Microsecond }), MeasureOptions{})
	tests := []struct {
		p    float64
		want time.Duration
	}{
		{50, 5 * time.Millisecond},
		{90, 9 * time.Millisecond},
		{99, 9900 * time.Microsecond},
		{99.9, 9990 * time.Microsecond},
		{99.99, 9999 * time.Microsecond},
		{100, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := m.Overall.Percentile(tt.p); !within(got, tt.want) {
			t.Errorf("p%v = %v, want %v (+0.1%%)", tt.p, got, tt.want)
		}
	}
	if m.Overall.Max() != 10*time.Millisecond || m.Overall.Min() != time.Microsecond {
		t.Errorf("min, max = %v, %v; want exact 1µs, 10ms", m.Overall.Min(), m.Overall.Max())
	}
	if got, want := m.Overall.Mean(), 5000500*time.Nanosecond; got != want {
		t.Errorf("mean = %v, want %v", got, want)
	}
	st := m.Overall.Stats()
	if st.Calls != 10_000 || st.Measured != 10_000 || math.Abs(st.P99Ms-9.9) > 0.01 || st.MaxMs != 10 {
		t.Errorf("stats = %+v", st)
	}
	sp := m.Overall.Spectrum()
	if len(sp) != MaxNines*spectrumSteps+1 || sp[0].Percentile != 0 || sp[len(sp)-1].Percentile != 99.999 {
		t.Fatalf("spectrum has %d points from %v to %v", len(sp), sp[0], sp[len(sp)-1])
	}
	for i := 1; i < len(sp); i++ {
		if sp[i].Ms < sp[i-1].Ms {
			t.Fatalf("spectrum decreases at %v", sp[i])
		}
	}
}

// TestOpenLoopStall: a driver sending 1,000 calls/s stalls for one second;
// the calls due in that second go out late, all at once. Measured from
// Intended they took up to a second, which p99.9 and the late sends show;
// measured from Call they would all look fast (coordinated omission).
func TestOpenLoopStall(t *testing.T) {
	const rate, seconds = 1000, 10
	stallFrom, stallTo := synthBase+5e9, synthBase+6e9
	h := &history.History{}
	for i := range rate * seconds {
		intended := synthBase + int64(i)*ms1
		call := intended + 10_000 // 10 µs to send
		if intended >= stallFrom && intended < stallTo {
			call = stallTo
		}
		h.Ops = append(h.Ops, history.Op{Kind: history.KindCall, Client: i % 4, Key: "k", Intended: intended,
			Call: call, Return: call + ms1, Outcome: history.Replayed, Resp: "r"})
	}
	if *sampleDir != "" {
		if _, err := WriteRunReport(filepath.Join(*sampleDir, "stall"), h, checker.Report{}, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	m := Measure(h, MeasureOptions{})
	if m.OpenLoop != rate*seconds {
		t.Errorf("open-loop calls = %d, want %d", m.OpenLoop, rate*seconds)
	}
	// The calls due in [5 s, 6 s) were sent 0 to 1,000 ms late; those more
	// than 1 ms late are the 999 not due in the stall's last millisecond.
	if m.LateSends != 999 {
		t.Errorf("late sends = %d, want 999", m.LateSends)
	}
	if m.MaxSendDelay != time.Second {
		t.Errorf("max send delay = %v, want 1s", m.MaxSendDelay)
	}
	// 10% of the calls took 1 ms to 1,001 ms, evenly spread: p99 is about
	// 901 ms and p99.9 about 991 ms.
	if p := m.Overall.Percentile(99.9); p < 980*time.Millisecond || p > 1002*time.Millisecond {
		t.Errorf("p99.9 = %v, want about 991ms", p)
	}
	if p := m.Overall.Percentile(99); p < 890*time.Millisecond || p > 910*time.Millisecond {
		t.Errorf("p99 = %v, want about 901ms", p)
	}
	if p := m.Overall.Percentile(50); p < 990*time.Microsecond || p > 1020*time.Microsecond {
		t.Errorf("p50 = %v, want about 1ms", p)
	}
	// The same history measured from Call hides the stall.
	for i := range h.Ops {
		h.Ops[i].Intended = 0
	}
	closed := Measure(h, MeasureOptions{})
	if p := closed.Overall.Percentile(99.9); p > 2*time.Millisecond {
		t.Errorf("closed-loop p99.9 = %v, want about 1ms", p)
	}
	if closed.LateSends != 0 || closed.OpenLoop != 0 {
		t.Errorf("closed loop: late sends %d, open-loop calls %d; want 0, 0", closed.LateSends, closed.OpenLoop)
	}
}

func TestLateSlack(t *testing.T) {
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindCall, Intended: 1000, Call: 1000 + 2*ms1, Return: 1000 + 3*ms1, Outcome: history.Error},
		{Kind: history.KindCall, Intended: 1000, Call: 1000 + 1, Return: 1000 + 3*ms1, Outcome: history.Error},
		{Kind: history.KindCall, Intended: 1000, Call: 1000, Return: 1000 + 3*ms1, Outcome: history.Error},
	}}
	for _, tt := range []struct {
		slack time.Duration
		want  int
	}{{0, 1}, {5 * time.Millisecond, 0}, {-1, 2}} {
		if got := Measure(h, MeasureOptions{LateSlack: tt.slack}).LateSends; got != tt.want {
			t.Errorf("slack %v: late sends = %d, want %d", tt.slack, got, tt.want)
		}
	}
}

func TestPhasesAndOutcomes(t *testing.T) {
	s := int64(time.Second)
	call := func(at, lat int64, o history.Outcome) history.Op {
		op := history.Op{Kind: history.KindCall, Key: "k", Call: synthBase + at, Return: synthBase + at + lat, Outcome: o}
		if o.HasResponse() {
			op.Resp = "r"
		}
		if lat < 0 {
			op.Return = history.NoReturn
		}
		return op
	}
	h := &history.History{Ops: []history.Op{
		call(0, ms1, history.Executed),           // before
		call(s, ms1, history.Replayed),           // before
		call(2*s-ms1, 2*ms1, history.Replayed),   // overlaps the window's start: during
		call(2*s+s/2, 5*ms1, history.InProgress), // during
		call(2*s+s/2, -1, history.Unknown),       // during, never returned
		call(3*s+ms1, ms1, history.Replayed),     // after the first window
		call(4*s+s/2, ms1, history.Error),        // during the second (instant) window
		call(6*s, 3*ms1, history.Replayed),       // after
		{Kind: history.KindCall, Key: "k", Call: synthBase + 7*s, Return: synthBase + 8*s, Outcome: history.Replayed, Resp: "r", Probe: true},
		{Kind: history.KindEffect, Key: "k", Call: synthBase, Return: synthBase + 1, Applied: true},
		{Kind: history.KindFault, Client: -1, Call: synthBase + 2*s, Return: synthBase + 3*s, Label: "pause"},
		{Kind: history.KindFault, Client: -1, Call: synthBase + 4*s + s/2, Return: synthBase + 4*s + s/2, Label: "crash"},
	}}
	history.SortByCall(h.Ops)
	m := Measure(h, MeasureOptions{})
	counts := map[string]int{}
	for _, p := range Phases {
		counts[p.String()] = m.ByPhase(p).Calls
	}
	if diff := cmp.Diff(map[string]int{"before": 2, "during": 4, "after": 2}, counts); diff != "" {
		t.Errorf("calls per phase (-want +got):\n%s", diff)
	}
	if m.Calls != 8 || m.Probes != 1 || m.Effects != 1 || m.Faults != 2 || m.Completed != 7 || m.Successes != 5 || m.Errors != 3 {
		t.Errorf("counts: calls %d probes %d effects %d faults %d completed %d successes %d errors %d",
			m.Calls, m.Probes, m.Effects, m.Faults, m.Completed, m.Successes, m.Errors)
	}
	u := m.ByOutcome(history.Unknown)
	if u.Calls != 1 || u.Measured() != 0 || u.Unmeasured() != 1 || m.Overall.Unmeasured() != 1 {
		t.Errorf("unknown: calls %d measured %d; overall unmeasured %d", u.Calls, u.Measured(), m.Overall.Unmeasured())
	}
	if got := m.ByPhase(PhaseDuring).Max(); got != 5*time.Millisecond {
		t.Errorf("max during faults = %v, want 5ms", got)
	}
	if m.Duration != 6*time.Second+3*time.Millisecond {
		t.Errorf("duration = %v, want 6.003s (probes excluded)", m.Duration)
	}
	if len(m.Windows) != 2 || m.Windows[0].StartS != 2 || m.Windows[0].EndS != 3 || m.Windows[1].Label != "crash" {
		t.Errorf("windows = %+v", m.Windows)
	}
	// Buckets: errors at 2 s (in_progress, unknown at its call) and 4 s.
	tl := m.Timeline
	if tl.Len() != 7 || tl.Errors[2] != 2 || tl.Errors[4] != 1 || tl.Unreturned[2] != 1 || tl.Completed[2] != 2 {
		t.Errorf("timeline: len %d errors %v unreturned %v completed %v", tl.Len(), tl.Errors, tl.Unreturned, tl.Completed)
	}
	if tl.P99[6] != 3*time.Millisecond || tl.Measured[6] != 1 || tl.Measured[5] != 0 {
		t.Errorf("timeline p99 %v measured %v", tl.P99, tl.Measured)
	}
}

func TestNoFaultsIsAllBefore(t *testing.T) {
	m := Measure(closedLoop(100, func(int) time.Duration { return time.Millisecond }), MeasureOptions{})
	if m.ByPhase(PhaseBefore).Calls != 100 || m.ByPhase(PhaseDuring).Calls != 0 || len(m.Windows) != 0 {
		t.Errorf("phases: %d before, %d during; %d windows", m.ByPhase(PhaseBefore).Calls, m.ByPhase(PhaseDuring).Calls, len(m.Windows))
	}
}

func TestEmptyHistories(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]*history.History{"nil": nil, "empty": {}, "faults only": {Ops: []history.Op{
		{Kind: history.KindFault, Client: -1, Call: 5, Return: history.NoReturn},
	}}} {
		m := Measure(h, MeasureOptions{})
		if m.Calls != 0 || m.Throughput() != 0 || m.ErrorRate() != 0 || m.Overall.Percentile(99) != 0 || m.Overall.Spectrum() != nil {
			t.Errorf("%s: %+v", name, m)
		}
	}
}

// TestShardsDoNotChangeFigures measures a history large enough to be split
// and compares it with a single-goroutine measurement.
func TestShardsDoNotChangeFigures(t *testing.T) {
	h := synthHistory(synthSpec{calls: 300_000, rate: 20_000, clients: 64, seed: 3, faults: [][2]float64{{4, 6}}})
	split := Measure(h, MeasureOptions{})
	defer func(n int) { shardLimit = n }(shardLimit)
	shardLimit = 1
	single := Measure(h, MeasureOptions{})
	sum := func(m *Measurement) any {
		return []any{m.Calls, m.Completed, m.Errors, m.LateSends, m.Overall.Stats(), m.Overall.Spectrum(),
			m.ByPhase(PhaseDuring).Stats(), m.ByOutcome(history.Replayed).Stats(), m.Timeline, m.Scatter}
	}
	if diff := cmp.Diff(sum(single), sum(split)); diff != "" {
		t.Errorf("split measurement differs (-single +split):\n%s", diff)
	}
	if len(split.Scatter) > MaxScatterPoints || len(split.Scatter) < MaxScatterPoints/2 {
		t.Errorf("scatter has %d points, want at most %d", len(split.Scatter), MaxScatterPoints)
	}
}

func TestWideBuckets(t *testing.T) {
	h := &history.History{Ops: []history.Op{
		{Kind: history.KindCall, Call: 0, Return: 1, Outcome: history.Error},
		{Kind: history.KindCall, Call: 3 * MaxBuckets * int64(time.Second), Return: 3*MaxBuckets*int64(time.Second) + 1, Outcome: history.Error},
	}}
	m := Measure(h, MeasureOptions{})
	if m.Timeline.Bucket != 4*time.Second || m.Timeline.Len() > MaxBuckets {
		t.Errorf("bucket %v, %d buckets; want 4s, at most %d", m.Timeline.Bucket, m.Timeline.Len(), MaxBuckets)
	}
}

func TestNines(t *testing.T) {
	for _, tt := range []struct{ p, n float64 }{{0, 0}, {90, 1}, {99, 2}, {99.9, 3}, {99.999, 5}} {
		if got := Nines(tt.p); math.Abs(got-tt.n) > 1e-9 {
			t.Errorf("Nines(%v) = %v, want %v", tt.p, got, tt.n)
		}
		if got := PercentileOfNines(tt.n); math.Abs(got-tt.p) > 1e-9 {
			t.Errorf("PercentileOfNines(%v) = %v, want %v", tt.n, got, tt.p)
		}
	}
	if !math.IsInf(Nines(100), 1) {
		t.Error("Nines(100) is not +Inf")
	}
}

// TestScatterSample: calls and effects alternate, which a sample by index
// remainder would take all or nothing of; the sample stays near its bound.
func TestScatterSample(t *testing.T) {
	h := &history.History{}
	for i := range 3 * MaxScatterPoints {
		at := int64(i) * ms1
		h.Ops = append(h.Ops,
			history.Op{Kind: history.KindCall, Key: "k", Call: at, Return: at + ms1, Outcome: history.Error},
			history.Op{Kind: history.KindEffect, Key: "k", Call: at, Return: at + 1})
	}
	m := Measure(h, MeasureOptions{})
	if n := len(m.Scatter); n > MaxScatterPoints || n < MaxScatterPoints*3/4 {
		t.Errorf("scatter has %d points, want about %d and at most that", n, MaxScatterPoints)
	}
}

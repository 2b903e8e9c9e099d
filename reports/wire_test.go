package reports

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idembench/idembench/checker"
	"github.com/idembench/idembench/history"
)

// TestLatencyWireMergeIsExact: the calls of a run split among three
// workers, each sending the histogram of its own calls; the merged
// histogram is the one of all calls (every count, min, max and mean), and
// the summary's p99 threshold is judged on it.
func TestLatencyWireMergeIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []history.Op
	parts := make([][]history.Op, 3)
	for i := range 30000 {
		call := int64(i) * int64(time.Microsecond)
		lat := int64(rng.ExpFloat64() * float64(2*time.Millisecond))
		op := history.Op{Kind: history.KindCall, Client: i % 3, Key: "k", Call: call, Return: call + lat, Outcome: history.Executed}
		switch i % 100 {
		case 7:
			op.Return = history.NoReturn // unmeasured, still a call
		case 8:
			op.Probe = true // not counted
		}
		all = append(all, op)
		parts[i%3] = append(parts[i%3], op)
	}
	var merged Latency
	for _, p := range parts {
		w, err := CallsLatency(p).Wire()
		if err != nil {
			t.Fatal(err)
		}
		if err := merged.AddWire(w); err != nil {
			t.Fatal(err)
		}
	}
	whole := CallsLatency(all)
	if got, want := merged.Stats(), whole.Stats(); got != want {
		t.Fatalf("merged %+v, want %+v", got, want)
	}
	if !merged.Hist.Equals(whole.Hist) {
		t.Fatal("merged histogram differs from the whole run's")
	}
	h := &history.History{Ops: all}
	if got, want := whole.Stats(), Measure(h, MeasureOptions{}).Overall.Stats(); got != want {
		t.Fatalf("CallsLatency %+v, Measure %+v: not the same latency", got, want)
	}
	// The threshold is judged on the merged histogram when it is given.
	limit := merged.Percentile(99) - time.Millisecond
	s := NewSummary(Measure(h, MeasureOptions{}), &checker.Report{}, Options{Overall: &merged, Thresholds: &Thresholds{MaxP99: limit}})
	if s.Thresholds == nil || s.Thresholds.Passed {
		t.Fatalf("p99 %s against a maximum of %s: thresholds %+v", merged.Percentile(99), limit, s.Thresholds)
	}
	// A histogram of another range is refused, and l is unchanged.
	bad := LatencyWire{Calls: 1, Hist: []byte("not a histogram")}
	before := merged.Stats()
	if err := merged.AddWire(bad); err == nil || merged.Stats() != before {
		t.Fatalf("a bad histogram: error %v, stats %+v (were %+v)", err, merged.Stats(), before)
	}
}

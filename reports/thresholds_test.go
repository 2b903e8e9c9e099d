package reports

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestThresholdsCheck(t *testing.T) {
	sum := func(p99 float64, measured int, tput, errRate float64) *Summary {
		s := &Summary{ThroughputPerS: tput, ErrorRate: errRate}
		s.Latency.Overall = LatencyStats{Measured: measured, P99Ms: p99}
		return s
	}
	all := Thresholds{MaxP99: 50 * time.Millisecond, MinThroughput: 1000, MaxErrorRate: 0.01}
	tests := []struct {
		name string
		t    Thresholds
		s    *Summary
		want []string // figures missed
	}{
		{"all met", all, sum(49.9, 10, 1000, 0.01), nil},
		{"p99 equal to the limit is met", all, sum(50, 10, 2000, 0), nil},
		{"p99 missed", all, sum(50.1, 10, 2000, 0), []string{FigureP99}},
		{"nothing measured misses p99", all, sum(0, 0, 2000, 0), []string{FigureP99}},
		{"throughput missed", all, sum(1, 10, 999.9, 0), []string{FigureThroughput}},
		{"error rate missed", all, sum(1, 10, 2000, 0.0101), []string{FigureErrorRate}},
		{"all missed in order", all, sum(60, 10, 10, 0.5), []string{FigureP99, FigureThroughput, FigureErrorRate}},
		{"zero thresholds check nothing", Thresholds{}, sum(1e9, 0, 0, 1), nil},
		{"only throughput set", Thresholds{MinThroughput: 5}, sum(1e9, 0, 4, 1), []string{FigureThroughput}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range tt.t.Check(tt.s) {
				got = append(got, m.Figure)
				if m.Reason == "" || m.String() != m.Reason {
					t.Errorf("miss %+v has no reason", m)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("misses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestThresholdResultRoundTrip(t *testing.T) {
	th := Thresholds{MaxP99: 50 * time.Millisecond, MinThroughput: 1000, MaxErrorRate: 0.02}
	r := th.result(&Summary{ThroughputPerS: 10})
	if got := r.Thresholds(); got != th {
		t.Errorf("Thresholds() = %+v, want %+v", got, th)
	}
	if r.Passed || len(r.Misses) != 2 {
		t.Errorf("passed %v, misses %v", r.Passed, r.Misses)
	}
	if !(Thresholds{}).IsZero() || th.IsZero() {
		t.Error("IsZero is wrong")
	}
}

func ExampleThresholds_Check() {
	s := &Summary{ThroughputPerS: 850, ErrorRate: 0.002}
	s.Latency.Overall = LatencyStats{Measured: 1000, P99Ms: 73.2}
	t := Thresholds{MaxP99: 50 * time.Millisecond, MinThroughput: 1000, MaxErrorRate: 0.01}
	for _, m := range t.Check(s) {
		fmt.Println(m)
	}
	// Output:
	// p99 latency 73.2 ms is above the maximum 50 ms
	// throughput 850 ops/s is below the minimum 1,000 ops/s
}

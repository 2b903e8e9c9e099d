package reports

import (
	"fmt"
	"time"
)

// Thresholds are performance and availability limits a run must meet (the
// CLI exits 4 when one is missed). A zero field is not checked; to demand
// no errors at all, set MaxErrorRate to a tiny positive value such as 1e-9.
type Thresholds struct {
	// MaxP99 is the highest acceptable overall p99 latency.
	MaxP99 time.Duration
	// MinThroughput is the lowest acceptable throughput, in completed
	// calls per second (Summary.ThroughputPerS).
	MinThroughput float64
	// MaxErrorRate is the highest acceptable fraction of calls with an
	// error outcome (Summary.ErrorRate, between 0 and 1).
	MaxErrorRate float64
}

// IsZero reports whether no threshold is set.
func (t Thresholds) IsZero() bool { return t == Thresholds{} }

// The figures a Miss can name.
const (
	FigureP99        = "p99"
	FigureThroughput = "throughput"
	FigureErrorRate  = "error_rate"
)

// Miss is one threshold a run did not meet.
type Miss struct {
	// Figure is FigureP99, FigureThroughput or FigureErrorRate.
	Figure string `json:"figure"`
	// Measured and Threshold are in Unit.
	Measured  float64 `json:"measured"`
	Threshold float64 `json:"threshold"`
	// Unit is "ms", "ops/s" or "ratio".
	Unit string `json:"unit"`
	// Reason explains the miss in one line ("p99 latency 73.2 ms is
	// above the maximum 50 ms").
	Reason string `json:"reason"`
}

// String returns m.Reason.
func (m Miss) String() string { return m.Reason }

// Check returns the thresholds s misses, in the order p99, throughput,
// error rate; nil when it meets them all. A p99 limit is missed by a run
// that measured no latency at all (nothing to vouch for it).
func (t Thresholds) Check(s *Summary) []Miss {
	var out []Miss
	if t.MaxP99 > 0 {
		limit := ms(t.MaxP99)
		p99 := s.Latency.Overall.P99Ms
		switch {
		case s.Latency.Overall.Measured == 0:
			out = append(out, Miss{FigureP99, 0, limit, "ms",
				fmt.Sprintf("p99 latency not measured (no call returned); the maximum is %s ms", num(limit))})
		case p99 > limit:
			out = append(out, Miss{FigureP99, p99, limit, "ms",
				fmt.Sprintf("p99 latency %s ms is above the maximum %s ms", num(p99), num(limit))})
		}
	}
	if t.MinThroughput > 0 && s.ThroughputPerS < t.MinThroughput {
		out = append(out, Miss{FigureThroughput, s.ThroughputPerS, t.MinThroughput, "ops/s",
			fmt.Sprintf("throughput %s ops/s is below the minimum %s ops/s", num(s.ThroughputPerS), num(t.MinThroughput))})
	}
	if t.MaxErrorRate > 0 && s.ErrorRate > t.MaxErrorRate {
		out = append(out, Miss{FigureErrorRate, s.ErrorRate, t.MaxErrorRate, "ratio",
			fmt.Sprintf("error rate %s is above the maximum %s", percent(s.ErrorRate), percent(t.MaxErrorRate))})
	}
	return out
}

// ThresholdResult records, in summary.json, the thresholds a run was held
// to and what it missed. A zero limit was not checked.
type ThresholdResult struct {
	MaxP99Ms          float64 `json:"max_p99_ms"`
	MinThroughputPerS float64 `json:"min_throughput_per_s"`
	MaxErrorRate      float64 `json:"max_error_rate"`
	Passed            bool    `json:"passed"`
	Misses            []Miss  `json:"misses"`
}

// Thresholds returns the limits r records.
func (r *ThresholdResult) Thresholds() Thresholds {
	return Thresholds{
		MaxP99:        time.Duration(r.MaxP99Ms * 1e6),
		MinThroughput: r.MinThroughputPerS,
		MaxErrorRate:  r.MaxErrorRate,
	}
}

func (t Thresholds) result(s *Summary) *ThresholdResult {
	misses := t.Check(s)
	if misses == nil {
		misses = []Miss{}
	}
	return &ThresholdResult{
		MaxP99Ms:          ms(t.MaxP99),
		MinThroughputPerS: t.MinThroughput,
		MaxErrorRate:      t.MaxErrorRate,
		Passed:            len(misses) == 0,
		Misses:            misses,
	}
}

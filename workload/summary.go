package workload

import (
	"slices"
	"time"

	"github.com/idembench/idembench/history"
)

// Summary is the performance and outcome digest of a run. It is the one
// place where latency and throughput are computed.
type Summary struct {
	Calls   int `json:"calls"`
	Effects int `json:"effects"`
	Faults  int `json:"faults"`
	Probes  int `json:"probes"`
	// Outcomes counts client calls by outcome (probes excluded).
	Outcomes map[string]int `json:"outcomes"`
	// ProbeOutcomes counts liveness probes by outcome.
	ProbeOutcomes   map[string]int `json:"probe_outcomes,omitempty"`
	EffectsApplied  int            `json:"effects_applied"`
	EffectsRejected int            `json:"effects_rejected"`
	EffectsUnknown  int            `json:"effects_unknown,omitempty"`
	Deliveries      int64          `json:"deliveries,omitempty"`
	LateSends       int64          `json:"late_sends,omitempty"`
	// Traffic is the length of the traffic phase plus its drain.
	Traffic time.Duration `json:"traffic_ns"`
	// OpsPerSec is recorded operations (calls and effects, probes
	// excluded) per second of Traffic: the driver's throughput.
	OpsPerSec float64 `json:"ops_per_sec"`
	// CallsPerSec is client calls per second of Traffic.
	CallsPerSec float64 `json:"calls_per_sec"`
	// Latency is the distribution of call latencies: from the intended
	// send time in open-loop runs (first attempts), else from the call,
	// to the return. Calls without a return (unknown) are not in it.
	Latency Percentiles `json:"latency"`
}

// Percentiles of a latency distribution; all zero when N is zero.
type Percentiles struct {
	N    int           `json:"n"`
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`
}

// Summarize digests ops. res may be nil (a history checked offline); then
// the traffic phase is taken as the span of the client calls.
func Summarize(ops []history.Op, res *Result) Summary {
	s := Summary{Outcomes: map[string]int{}}
	lat := make([]time.Duration, 0, len(ops)/2)
	first, last := int64(0), int64(0)
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case history.KindFault:
			s.Faults++
			continue
		case history.KindEffect:
			s.Effects++
			switch {
			case op.Outcome == history.Unknown:
				s.EffectsUnknown++
			case op.Applied:
				s.EffectsApplied++
			default:
				s.EffectsRejected++
			}
			continue
		}
		if op.Probe {
			s.Probes++
			if s.ProbeOutcomes == nil {
				s.ProbeOutcomes = map[string]int{}
			}
			s.ProbeOutcomes[op.Outcome.String()]++
			continue
		}
		s.Calls++
		s.Outcomes[op.Outcome.String()]++
		if first == 0 || op.Call < first {
			first = op.Call
		}
		if op.Return != history.NoReturn {
			last = max(last, op.Return)
			from := op.Call
			if op.Intended > 0 {
				from = op.Intended
			}
			lat = append(lat, time.Duration(op.Return-from))
		}
	}
	traffic := time.Duration(last - first)
	recorded := s.Calls + s.Effects
	if res != nil {
		traffic = time.Duration(res.DrainEnd - res.TrafficStart)
		recorded = res.TrafficOps
		s.Deliveries = res.Deliveries
		s.LateSends = res.LateSends
	}
	s.Traffic = traffic
	if traffic > 0 {
		s.OpsPerSec = float64(recorded) / traffic.Seconds()
		s.CallsPerSec = float64(s.Calls) / traffic.Seconds()
	}
	s.Latency = percentiles(lat)
	return s
}

// percentiles sorts lat and reads the nearest-rank percentiles.
func percentiles(lat []time.Duration) Percentiles {
	if len(lat) == 0 {
		return Percentiles{}
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(lat))+0.999999999) - 1
		return lat[min(max(i, 0), len(lat)-1)]
	}
	return Percentiles{
		N:    len(lat),
		P50:  at(0.50),
		P90:  at(0.90),
		P99:  at(0.99),
		P999: at(0.999),
		Max:  lat[len(lat)-1],
	}
}

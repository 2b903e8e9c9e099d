package reports

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HistogramMax is the longest latency the histograms track. A longer latency
// is recorded as HistogramMax, so percentiles saturate there; Latency.Max
// stays exact.
const HistogramMax = 24 * time.Hour

// histogramDigits is the HDR precision: values are kept to 3 significant
// digits (at most 0.1% relative error, rounded up).
const histogramDigits = 3

// MaxNines is the last point of the percentile spectrum: 5 nines, 99.999%.
const MaxNines = 5

// Latency is the latency distribution of one group of calls (all calls, one
// outcome or one phase). Percentiles come from an HDR histogram with 1 ns
// resolution and 3 significant digits: a reported percentile is the highest
// value equivalent to the true one, at most 0.1% above it. Min and Max are
// exact. The zero Latency is empty and ready to use.
type Latency struct {
	// Calls counts every call of the group, measured or not.
	Calls int
	// Hist holds the measured latencies in nanoseconds; nil while nothing
	// was measured.
	Hist *hdrhistogram.Histogram
	min  int64
	max  int64
	sum  float64
}

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(HistogramMax), histogramDigits)
}

// record adds one measured latency of ns nanoseconds (negative counts as 0).
func (l *Latency) record(ns int64) {
	ns = max(ns, 0)
	if l.Hist == nil {
		l.Hist = newHistogram()
		l.min = ns
	}
	_ = l.Hist.RecordValue(min(ns, int64(HistogramMax)))
	l.min = min(l.min, ns)
	l.max = max(l.max, ns)
	l.sum += float64(ns)
}

// merge adds o's calls and latencies to l.
func (l *Latency) merge(o *Latency) {
	l.Calls += o.Calls
	if o.Hist == nil {
		return
	}
	if l.Hist == nil {
		l.Hist = newHistogram()
		l.min = o.min
	}
	l.Hist.Merge(o.Hist)
	l.min = min(l.min, o.min)
	l.max = max(l.max, o.max)
	l.sum += o.sum
}

// Measured returns how many calls of the group have a latency.
func (l *Latency) Measured() int {
	if l.Hist == nil {
		return 0
	}
	return int(l.Hist.TotalCount())
}

// Unmeasured returns how many calls of the group have no latency (their
// Return is NoReturn).
func (l *Latency) Unmeasured() int { return l.Calls - l.Measured() }

// Percentile returns the latency at percentile p (0 to 100; values outside
// are clamped). It returns 0 when nothing was measured. Percentile(100) is
// the exact maximum.
func (l *Latency) Percentile(p float64) time.Duration {
	switch {
	case l.Hist == nil:
		return 0
	case p >= 100:
		return time.Duration(l.max)
	case p <= 0:
		return time.Duration(l.min)
	}
	return time.Duration(min(l.Hist.ValueAtPercentile(p), l.max))
}

// Min returns the exact smallest measured latency, 0 when none.
func (l *Latency) Min() time.Duration { return time.Duration(l.min) }

// Max returns the exact largest measured latency, 0 when none.
func (l *Latency) Max() time.Duration { return time.Duration(l.max) }

// Mean returns the exact mean measured latency, 0 when none.
func (l *Latency) Mean() time.Duration {
	if n := l.Measured(); n > 0 {
		return time.Duration(l.sum / float64(n))
	}
	return 0
}

// LatencyStats are the headline figures of a Latency, in milliseconds, as
// written to summary.json. All figures are 0 when Measured is 0.
type LatencyStats struct {
	Calls    int     `json:"calls"`
	Measured int     `json:"measured"`
	MeanMs   float64 `json:"mean_ms"`
	P50Ms    float64 `json:"p50_ms"`
	P90Ms    float64 `json:"p90_ms"`
	P99Ms    float64 `json:"p99_ms"`
	P999Ms   float64 `json:"p99_9_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// Stats returns the headline figures of l.
func (l *Latency) Stats() LatencyStats {
	return LatencyStats{
		Calls:    l.Calls,
		Measured: l.Measured(),
		MeanMs:   ms(l.Mean()),
		P50Ms:    ms(l.Percentile(50)),
		P90Ms:    ms(l.Percentile(90)),
		P99Ms:    ms(l.Percentile(99)),
		P999Ms:   ms(l.Percentile(99.9)),
		MaxMs:    ms(l.Max()),
	}
}

// SpectrumPoint is one point of a percentile spectrum.
type SpectrumPoint struct {
	// Percentile is between 0 and 100.
	Percentile float64 `json:"percentile"`
	// Ms is the latency at Percentile, in milliseconds.
	Ms float64 `json:"ms"`
}

// spectrumSteps is the number of points per nine of the spectrum.
const spectrumSteps = 20

// spectrumPercentiles returns the percentiles of the spectrum: evenly
// spaced on the nines axis from 0% to 99.999%.
func spectrumPercentiles() []float64 {
	ps := make([]float64, 0, MaxNines*spectrumSteps+1)
	for i := 0; i <= MaxNines*spectrumSteps; i++ {
		ps = append(ps, PercentileOfNines(float64(i)/spectrumSteps))
	}
	return ps
}

// Spectrum returns the latency at 101 percentiles evenly spaced on the
// nines axis from 0% to 99.999% (see Nines), or nil when nothing was
// measured.
func (l *Latency) Spectrum() []SpectrumPoint {
	if l.Hist == nil {
		return nil
	}
	ps := spectrumPercentiles()
	out := make([]SpectrumPoint, len(ps))
	for i, p := range ps {
		out[i] = SpectrumPoint{Percentile: roundTo(p, 6), Ms: ms(l.Percentile(p))}
	}
	return out
}

// Nines maps a percentile to the "nines" axis: 0% → 0, 90% → 1, 99% → 2,
// 99.9% → 3. Percentiles at or above 100 map to +Inf.
func Nines(percentile float64) float64 {
	if percentile >= 100 {
		return math.Inf(1)
	}
	return -math.Log10(1 - percentile/100)
}

// PercentileOfNines is the inverse of Nines.
func PercentileOfNines(n float64) float64 { return 100 * (1 - math.Pow(10, -n)) }

// ms converts d to milliseconds with nanosecond precision.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// roundTo rounds x to the given number of decimals.
func roundTo(x float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(x*p) / p
}

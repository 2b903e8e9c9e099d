package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// CoalescingCallers are the concurrencies BenchCoalescing measures.
var CoalescingCallers = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}

// CoalescingRates are completed Do calls per second of callers goroutines
// with a plain engine and with a coalescing one on the same store, and the
// median of the per-round ratios (coalesced / plain).
type CoalescingRates struct {
	Plain, Coalesced, Ratio float64
	// RatioLow and RatioHigh bound the median ratio with about 95 %
	// confidence (the order statistics of the per-round ratios that a
	// median falls between in 95 % of samples, whatever their
	// distribution): a difference from 1 smaller than their spread is not
	// resolved by the run.
	RatioLow, RatioHigh float64
}

// MeasureCoalescing runs callers goroutines that each call Do on fresh
// keys (a claim, a trivial function, a completion), on plain and on
// coalesced, engines on one store, for d per side and round, in rounds
// ordered A B B A (reversed every other round), and returns the medians.
// prefix starts every key.
func MeasureCoalescing(ctx context.Context, plain, coalesced *idem.Engine, prefix string, callers, rounds int, d time.Duration) (CoalescingRates, error) {
	var seq atomic.Int64
	var pl, co, ratio []float64
	for r := range rounds {
		order := []bool{false, true, true, false}
		if r%2 == 1 {
			order = []bool{true, false, false, true}
		}
		var n, secs [2]float64
		for _, c := range order {
			e, side := plain, 0
			if c {
				e, side = coalesced, 1
			}
			m, s, err := callDo(ctx, e, prefix, &seq, callers, d/2)
			if err != nil {
				return CoalescingRates{}, err
			}
			n[side] += m
			secs[side] += s
		}
		pl, co = append(pl, n[0]/secs[0]), append(co, n[1]/secs[1])
		ratio = append(ratio, (n[1]/secs[1])/(n[0]/secs[0]))
	}
	lo, hi := medianCI(ratio)
	return CoalescingRates{Plain: median(pl), Coalesced: median(co), Ratio: median(ratio), RatioLow: lo, RatioHigh: hi}, nil
}

// medianCI returns the order statistics x(k) and x(n+1-k) of xs that bound
// its median with at least 95 % confidence for any distribution: k is the
// largest rank with P(Binomial(n, ½) < k) ≤ 2.5 %. With fewer than 6
// values no such k exists and it returns the smallest and largest.
func medianCI(xs []float64) (lo, hi float64) {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	k, cdf, term := 1, 0.0, math.Pow(0.5, float64(n)) // term: P(X = j), X ~ Binomial(n, ½)
	for j := range n {
		cdf += term // P(X ≤ j) = P(X < j+1)
		if cdf > 0.025 {
			break
		}
		k = j + 1
		term *= float64(n-j) / float64(j+1)
	}
	return xs[k-1], xs[n-k]
}

// callDo runs callers goroutines calling Do on e for d and returns the
// calls completed and the seconds taken.
func callDo(ctx context.Context, e *idem.Engine, prefix string, seq *atomic.Int64, callers int, d time.Duration) (calls, secs float64, err error) {
	fp := idem.FingerprintString("message")
	fn := func(context.Context) (idem.Response, error) { return idem.Response{Status: 200}, nil }
	return drive(callers, d, func() func() (int, error) {
		return func() (int, error) {
			_, err := e.Do(ctx, prefix+"-"+strconv.FormatInt(seq.Add(1), 36), fp, fn)
			return 1, err
		}
	})
}

// drive runs workers goroutines, each calling its own step (from newStep)
// until d has passed or a step of any of them failed, and returns how many
// items the steps completed and the seconds taken, or the first error.
func drive(workers int, d time.Duration, newStep func() func() (int, error)) (n, secs float64, err error) {
	var done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for range workers {
		step := newStep()
		wg.Go(func() {
			for time.Now().Before(stop) && firstErr.Load() == nil {
				k, err := step()
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(int64(k))
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return float64(done.Load()), time.Since(start).Seconds(), nil
}

// CoalescingRounds and CoalescingPhase are BenchCoalescing's ABBA rounds
// per concurrency (IDEM_BENCH_ROUNDS replaces the number) and each side's
// time per round: with 21 rounds the 95 % bounds of the median ratio are
// its 6th and 16th values, about ±0.65 standard deviations of the single
// rounds' ratios (±3 % when they scatter by 5 %), and the nine
// concurrencies take about 80 s. The bounds narrow as the square root of
// the rounds: 84 rounds halve them.
const (
	CoalescingRounds = 21
	CoalescingPhase  = 200 * time.Millisecond
)

// BenchCoalescing is the body of a store's coalescing benchmark: for each
// of CoalescingCallers it runs MeasureCoalescing on st (CoalescingRounds
// or IDEM_BENCH_ROUNDS rounds of CoalescingPhase per side, so that the two
// sides of a round see the same load) with a plain engine and one with opts
// (idem.WithCoalescing), as a sub-benchmark callers=N that reports
// plain-do/s, coalesced-do/s, their ratio (target ≥ 0.97 at every
// concurrency) and the ratio's 95 % confidence bounds (ratio-lo,
// ratio-hi). At the end it prints one line per concurrency and the
// lowest ratio. report, when not nil, reports more metrics on each
// sub-benchmark.
func BenchCoalescing(b *testing.B, st idem.Store, report func(*testing.B), opts ...idem.Option) {
	plain := idem.New(st, idem.WithHeartbeat(-1), idem.WithoutCoalescing())
	defer plain.Close()
	coalesced := idem.New(st, append([]idem.Option{idem.WithHeartbeat(-1)}, opts...)...)
	defer coalesced.Close()
	rounds := benchRounds(b, CoalescingRounds)
	var lines []string
	lowest, at := math.Inf(1), 0
	for _, callers := range CoalescingCallers {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			for range b.N {
				m, err := MeasureCoalescing(context.Background(), plain, coalesced, fmt.Sprintf("co%x", rand.Uint64()), callers, rounds, CoalescingPhase)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(m.Plain, "plain-do/s")
				b.ReportMetric(m.Coalesced, "coalesced-do/s")
				b.ReportMetric(m.Ratio, "ratio")
				b.ReportMetric(m.RatioLow, "ratio-lo")
				b.ReportMetric(m.RatioHigh, "ratio-hi")
				if report != nil {
					report(b)
				}
				lines = append(lines, fmt.Sprintf("%4d callers: %8.0f plain/s %8.0f coalesced/s  ratio %.3f [%.3f, %.3f]", callers, m.Plain, m.Coalesced, m.Ratio, m.RatioLow, m.RatioHigh))
				if m.Ratio < lowest {
					lowest, at = m.Ratio, callers
				}
			}
		})
	}
	// A benchmark with sub-benchmarks does not print its own log: the
	// summary goes to standard output, which go test shows.
	if len(lines) > 0 {
		fmt.Printf("%s: coalesced / plain, median of %d ABBA rounds [95 %% bounds]\n", b.Name(), rounds)
		for _, l := range lines {
			fmt.Println(l)
		}
		fmt.Printf("%s: lowest ratio %.3f at %d callers (target ≥ 0.97 everywhere)\n", b.Name(), lowest, at)
	}
}

// BenchRoundsEnv names the variable that replaces BenchCoalescing's number
// of rounds: a whole number from 6 to 1000.
const BenchRoundsEnv = "IDEM_BENCH_ROUNDS"

// benchRounds returns IDEM_BENCH_ROUNDS, or def when it is unset; anything
// but a whole number from 6 to 1000 fails b.
func benchRounds(b testing.TB, def int) int {
	b.Helper()
	v := os.Getenv(BenchRoundsEnv)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 6 || n > 1000 {
		b.Fatalf("%s=%q: want a whole number of rounds from 6 to 1000", BenchRoundsEnv, v)
	}
	return n
}

package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	return CoalescingRates{Plain: median(pl), Coalesced: median(co), Ratio: median(ratio)}, nil
}

// callDo runs callers goroutines calling Do on e for d and returns the
// calls completed and the seconds taken.
func callDo(ctx context.Context, e *idem.Engine, prefix string, seq *atomic.Int64, callers int, d time.Duration) (calls, secs float64, err error) {
	fp := idem.FingerprintString("message")
	fn := func(context.Context) (idem.Response, error) { return idem.Response{Status: 200}, nil }
	var done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for range callers {
		wg.Go(func() {
			for time.Now().Before(stop) && firstErr.Load() == nil {
				if _, err := e.Do(ctx, prefix+"-"+strconv.FormatInt(seq.Add(1), 36), fp, fn); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return float64(done.Load()), time.Since(start).Seconds(), nil
}

// BenchCoalescing is the body of a store's coalescing benchmark: for each
// of CoalescingCallers it runs MeasureCoalescing on st (15 rounds of
// 200 ms per side, so that the two sides of a round see the same load) with a plain engine and one with opts (idem.WithCoalescing), as
// a sub-benchmark callers=N that reports plain-do/s, coalesced-do/s and
// their ratio (target ≥ 0.97 at every concurrency). report, when not nil,
// reports more metrics on each sub-benchmark.
func BenchCoalescing(b *testing.B, st idem.Store, report func(*testing.B), opts ...idem.Option) {
	plain := idem.New(st, idem.WithHeartbeat(-1))
	defer plain.Close()
	coalesced := idem.New(st, append([]idem.Option{idem.WithHeartbeat(-1)}, opts...)...)
	defer coalesced.Close()
	for _, callers := range CoalescingCallers {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			for range b.N {
				m, err := MeasureCoalescing(context.Background(), plain, coalesced, fmt.Sprintf("co%x", rand.Uint64()), callers, 15, 200*time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(m.Plain, "plain-do/s")
				b.ReportMetric(m.Coalesced, "coalesced-do/s")
				b.ReportMetric(m.Ratio, "ratio")
				if report != nil {
					report(b)
				}
			}
		})
	}
}

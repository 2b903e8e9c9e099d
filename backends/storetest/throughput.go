package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// BatchRates are messages per second with Engine.Do per message and with
// Engine.DoBatch per batch, and their ratio. With a Meter they also hold
// what each message cost the server on each side (the meter's units per
// message) and the server's load while Do ran (its units per second): on a
// server that runs out of CPU while batching, 1 / (Ratio target ×
// PerMessage) is the budget per batched message that target needs.
type BatchRates struct {
	PerMessage, Batched, Ratio                  float64
	PerMessageCost, BatchedCost, PerMessageLoad float64
}

// Meter reads a cumulative counter of the server's, such as the CPU seconds
// it has used.
type Meter func() (float64, error)

// MeasureBatch runs consumers goroutines that each process messages with
// fresh keys (a claim, a trivial function, a completion), for d per round,
// once with Do per message and once with DoBatch over batch messages at a
// time, in rounds ordered A B B A (reversed every other round) so a drift
// of the machine's speed hurts both alike, and returns the median of each.
// prefix starts every key, so runs on a shared server do not meet. meter,
// when not nil, is read before and after every round.
func MeasureBatch(ctx context.Context, st idem.Store, prefix string, consumers, batch, rounds int, d time.Duration, meter Meter) (BatchRates, error) {
	e := idem.New(st, idem.WithLeaseTTL(time.Minute), idem.WithHeartbeat(-1))
	defer e.Close()
	var per, bat, perCost, batCost, perLoad []float64
	var seq atomic.Int64
	read := func() (float64, error) {
		if meter == nil {
			return 0, nil
		}
		return meter()
	}
	for r := range rounds {
		order := []bool{false, true, true, false}
		if r%2 == 1 {
			order = []bool{true, false, false, true}
		}
		for _, batched := range order {
			m0, err := read()
			if err != nil {
				return BatchRates{}, err
			}
			n, secs, err := consume(ctx, e, prefix, &seq, consumers, batch, batched, d/2)
			if err != nil {
				return BatchRates{}, err
			}
			m1, err := read()
			if err != nil {
				return BatchRates{}, err
			}
			if batched {
				bat = append(bat, n/secs)
				batCost = append(batCost, (m1-m0)/n)
			} else {
				per = append(per, n/secs)
				perCost = append(perCost, (m1-m0)/n)
				perLoad = append(perLoad, (m1-m0)/secs)
			}
		}
	}
	m := BatchRates{PerMessage: median(per), Batched: median(bat)}
	m.Ratio = m.Batched / m.PerMessage
	if meter != nil {
		m.PerMessageCost, m.BatchedCost, m.PerMessageLoad = median(perCost), median(batCost), median(perLoad)
	}
	return m, nil
}

// consume runs one round and returns the messages it processed and the
// seconds it took.
func consume(ctx context.Context, e *idem.Engine, prefix string, seq *atomic.Int64, consumers, batch int, batched bool, d time.Duration) (msgs, secs float64, err error) {
	fp := idem.FingerprintString("message")
	fn := func(context.Context) (idem.Response, error) { return idem.Response{Status: 200}, nil }
	return drive(consumers, d, func() func() (int, error) {
		if !batched {
			return func() (int, error) {
				_, err := e.Do(ctx, fmt.Sprintf("%s-%d", prefix, seq.Add(1)), fp, fn)
				return 1, err
			}
		}
		items := make([]idem.BatchItem, batch)
		return func() (int, error) {
			for i := range items {
				items[i] = idem.BatchItem{Key: fmt.Sprintf("%s-%d", prefix, seq.Add(1)), Fingerprint: fp, Fn: fn}
			}
			for _, r := range e.DoBatch(ctx, items) {
				if r.Err != nil {
					return 0, r.Err
				}
			}
			return batch, nil
		}
	})
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// LoneCallerLatency is the median latency of a single caller's Do calls
// with the plain engine and with coalescing, and their ratio.
type LoneCallerLatency struct {
	PlainP50, CoalescedP50 time.Duration
	Ratio                  float64 // CoalescedP50 / PlainP50
}

// MeasureLoneCaller times one caller's Do calls (fresh keys, a claim, a
// trivial function, a completion) on plain and on coalesced, engines on
// the same store, for d per side and round, in rounds ordered A B B A
// (reversed every other round), and returns the p50 of every call of each
// side. It answers whether coalescing costs a lone caller anything.
func MeasureLoneCaller(ctx context.Context, plain, coalesced *idem.Engine, prefix string, rounds int, d time.Duration) (LoneCallerLatency, error) {
	fp := idem.FingerprintString("message")
	fn := func(context.Context) (idem.Response, error) { return idem.Response{Status: 200}, nil }
	var seq int64
	var lat [2][]time.Duration
	for r := range rounds {
		order := []int{0, 1, 1, 0}
		if r%2 == 1 {
			order = []int{1, 0, 0, 1}
		}
		for _, side := range order {
			e := plain
			if side == 1 {
				e = coalesced
			}
			for stop := time.Now().Add(d / 2); time.Now().Before(stop); {
				seq++
				t0 := time.Now()
				if _, err := e.Do(ctx, fmt.Sprintf("%s-%d", prefix, seq), fp, fn); err != nil {
					return LoneCallerLatency{}, err
				}
				lat[side] = append(lat[side], time.Since(t0))
			}
		}
	}
	p50 := func(xs []time.Duration) time.Duration {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs[len(xs)/2]
	}
	m := LoneCallerLatency{PlainP50: p50(lat[0]), CoalescedP50: p50(lat[1])}
	m.Ratio = float64(m.CoalescedP50) / float64(m.PlainP50)
	return m, nil
}

// BenchBatch is the body of a store's batch benchmark: it runs MeasureBatch
// on st (8 consumers, batches of 100, three rounds of two seconds) and
// reports messages/s with Do per message and with DoBatch, and their
// ratio (target ≥ 5). meter, when not nil, is passed on; report, when not
// nil, reports more metrics of each measurement.
func BenchBatch(b *testing.B, st idem.Store, meter Meter, report func(BatchRates)) {
	for range b.N {
		m, err := MeasureBatch(context.Background(), st, fmt.Sprintf("bb%x", rand.Uint64()), 8, 100, 3, 2*time.Second, meter)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(m.PerMessage, "do-msg/s")
		b.ReportMetric(m.Batched, "batch-msg/s")
		b.ReportMetric(m.Ratio, "ratio")
		if report != nil {
			report(m)
		}
	}
}

// BenchLoneCaller is the body of a store's lone-caller benchmark: it runs
// MeasureLoneCaller on st (nine rounds of one second) with a plain and a
// coalesced engine and reports both p50s and their ratio (target ≤ 1.10).
func BenchLoneCaller(b *testing.B, st idem.Store) {
	plain := idem.New(st, idem.WithHeartbeat(-1), idem.WithoutCoalescing())
	defer plain.Close()
	coalesced := idem.New(st, idem.WithHeartbeat(-1), idem.WithCoalescing(idem.CoalesceOptions{}))
	defer coalesced.Close()
	for range b.N {
		m, err := MeasureLoneCaller(context.Background(), plain, coalesced, fmt.Sprintf("lc%x", rand.Uint64()), 9, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(m.PlainP50.Microseconds()), "plain-p50-µs")
		b.ReportMetric(float64(m.CoalescedP50.Microseconds()), "coalesced-p50-µs")
		b.ReportMetric(m.Ratio, "ratio")
	}
}

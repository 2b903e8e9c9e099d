package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
)

// BenchmarkPostgres compares completed Engine.Do calls per second on a
// pgstore with a bare loop doing the least a PostgreSQL idempotency store
// must do per request: one INSERT ... ON CONFLICT DO NOTHING that claims the
// key with a token from the sequence, and one UPDATE that stores the
// response, on the same pool, table and indexes. Both use a new key per call.
//
// At 1, 8 and 64 concurrent callers it runs benchRounds rounds; a round runs
// each side twice for benchPhase, in the order engine, bare, bare, engine
// (bare, engine, engine, bare in every other round), so a drift in the
// machine's speed during the round cancels out, and a side's rate in the
// round is its calls over its time. It reports the median rate of each side
// and the median of the per-round ratios (engine / bare): pairing the two
// sides within a round and taking medians keeps a passing load on the
// machine from deciding the result. The target is a ratio of at least 0.85
// at 8 and 64 callers. With -v it logs every round. With IDEM_BENCH_RTT
// (such as 500us) the pool reaches PostgreSQL through a proxy that adds
// that round trip, and the benchmark also reports the added round trip it
// measured (added-rtt-µs):
//
//	IDEM_POSTGRES_URL=... go test -run '^$' -bench BenchmarkPostgres -benchtime 1x ./backends/pgstore/
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench BenchmarkPostgres -benchtime 1x ./backends/pgstore/
func BenchmarkPostgres(b *testing.B) { benchPostgres(b, idem.WithoutCoalescing()) }

// BenchmarkPostgresCoalesced is BenchmarkPostgres with idem.WithCoalescing:
// concurrent calls share pipelined round trips and commits (target ≥ 1.3×
// the bare cycle at 64 callers; at 1 caller the same as without).
//
//	go test -run '^$' -bench BenchmarkPostgresCoalesced -benchtime 1x ./backends/pgstore/
func BenchmarkPostgresCoalesced(b *testing.B) {
	benchPostgres(b, idem.WithCoalescing(idem.CoalesceOptions{}))
}

// BenchmarkPostgresCoalescedInFlight8 is BenchmarkPostgresCoalesced with
// MaxInFlight 8 instead of the pool's 32: a server bound by its CPU (2
// cores here) does more with fewer transactions under way and larger
// batches (docs/performance.md).
//
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench 'BenchmarkPostgresCoalescedInFlight8/callers=64' -benchtime 1x ./backends/pgstore/
func BenchmarkPostgresCoalescedInFlight8(b *testing.B) {
	benchPostgres(b, idem.WithCoalescing(idem.CoalesceOptions{MaxInFlight: 8}))
}

func benchPostgres(b *testing.B, opts ...idem.Option) {
	s, reportRTT := benchStore(b, Options{})
	engine := idem.New(s, opts...)
	for _, callers := range []int{1, 8, 64} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			// Warm up: open the pool's connections and prepare the
			// statements on them, outside the measurement.
			benchPhaseRun(b, callers, engineCycle(engine, fmt.Sprintf("c%d.warm.%d.e.", callers, time.Now().UnixNano())))
			benchPhaseRun(b, callers, bareCycle(s, fmt.Sprintf("c%d.warm.%d.b.", callers, time.Now().UnixNano())))
			for range b.N {
				var do, bare, ratio []float64
				for round := range benchRounds {
					prefix := fmt.Sprintf("c%d.r%d.%d.", callers, round, time.Now().UnixNano())
					runEngine := func(n int) phase {
						return benchPhaseRun(b, callers, engineCycle(engine, prefix+"e"+strconv.Itoa(n)+"."))
					}
					runBare := func(n int) phase {
						return benchPhaseRun(b, callers, bareCycle(s, prefix+"b"+strconv.Itoa(n)+"."))
					}
					var d, r phase
					if round%2 == 0 {
						d = runEngine(0)
						r = runBare(0).add(runBare(1))
						d = d.add(runEngine(1))
					} else {
						r = runBare(0)
						d = runEngine(0).add(runEngine(1))
						r = r.add(runBare(1))
					}
					do, bare, ratio = append(do, d.rate()), append(bare, r.rate()), append(ratio, d.rate()/r.rate())
					b.Logf("round %2d: do/s %5.0f  bare/s %5.0f  ratio %.3f", round, d.rate(), r.rate(), d.rate()/r.rate())
				}
				b.ReportMetric(median(do), "do/s")
				b.ReportMetric(median(bare), "bare/s")
				b.ReportMetric(median(ratio), "ratio")
				reportRTT(b)
			}
		})
	}
}

const (
	benchRounds = 9
	benchPhase  = 250 * time.Millisecond
)

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// cycle handles request i of caller c.
type cycle func(ctx context.Context, c, i int) error

var benchResponse = idem.Response{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"p_1"}`)}

func engineCycle(e *idem.Engine, prefix string) cycle {
	f := idem.FingerprintString("bench")
	fn := func(context.Context) (idem.Response, error) { return benchResponse, nil }
	return func(ctx context.Context, c, i int) error {
		res, err := e.Do(ctx, prefix+strconv.Itoa(c)+"."+strconv.Itoa(i), f, fn)
		if err == nil && res.Replayed {
			err = fmt.Errorf("unexpected replay")
		}
		return err
	}
}

func bareCycle(s *Store, prefix string) cycle {
	f := idem.FingerprintString("bench")
	body := idem.EncodeResponse(&benchResponse)
	insert := `INSERT INTO ` + s.table + ` (key, status, fingerprint, token, lease_expires_at, created_at, updated_at, expires_at)
VALUES ($1, 'in_progress', $2, nextval('` + s.seq + `'::regclass), now() + interval '30 seconds', now(), now(), now() + interval '1 day')
ON CONFLICT (key) DO NOTHING`
	update := `UPDATE ` + s.table + ` SET status = 'completed', response = $2, lease_expires_at = NULL,
updated_at = now(), expires_at = now() + interval '1 day' WHERE key = $1`
	return func(ctx context.Context, c, i int) error {
		key := prefix + strconv.Itoa(c) + "." + strconv.Itoa(i)
		if _, err := s.pool.Exec(ctx, insert, key, f[:]); err != nil {
			return err
		}
		_, err := s.pool.Exec(ctx, update, key, body)
		return err
	}
}

// phase is the outcome of running one side: calls completed and seconds.
type phase struct {
	calls int64
	secs  float64
}

func (p phase) add(o phase) phase { return phase{p.calls + o.calls, p.secs + o.secs} }

func (p phase) rate() float64 { return float64(p.calls) / p.secs }

// benchPhaseRun runs do from callers goroutines for benchPhase.
func benchPhaseRun(b *testing.B, callers int, do cycle) phase {
	b.Helper()
	ctx := context.Background()
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		fail  atomic.Value
	)
	stop := time.Now().Add(benchPhase)
	start := time.Now()
	for c := range callers {
		wg.Go(func() {
			i := 0
			for ; time.Now().Before(stop); i++ {
				if err := do(ctx, c, i); err != nil {
					fail.CompareAndSwap(nil, err)
					return
				}
			}
			total.Add(int64(i))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := fail.Load().(error); err != nil {
		b.Fatalf("cycle failed: %v", err)
	}
	return phase{calls: total.Load(), secs: elapsed.Seconds()}
}

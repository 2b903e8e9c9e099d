package redisstore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// A round measures the engine and the bare cycle twice each, for
// benchWindow at a time, in the order engine, bare, bare, engine (bare,
// engine, engine, bare in every other round), so both sides see the same
// load from other processes on average and a drift in the machine's speed
// cancels out; a round's rate for each side is its operations over its
// time. The reported figures are medians over benchRounds rounds, which a
// burst of load in a few rounds does not move.
const (
	benchWindow = 125 * time.Millisecond
	benchRounds = 21
)

// BenchmarkRedis compares completed Engine.Do calls per second on the Redis
// store with a bare cycle on the same client: the acquire script plus one
// HSET that marks the record completed, the least a Redis idempotency
// store has to send. It runs both at 1, 8 and 64 concurrent callers with
// unique keys and reports the medians of do/s, bare/s and of the ratio of
// each round (target ≥ 0.85 at 8 and 64 callers). It also reports the Redis
// server's CPU time per operation of each (INFO cpu; other clients of the
// same server inflate it), which shows what the fenced Complete script
// costs over a bare HSET on the server. Records are kept for an hour, so
// that no key expires during the run (Redis's expiry cycle would add its
// work to whichever side is running); the test's cleanup deletes them.
// With -v it logs every round. With IDEM_BENCH_RTT (such as 500us) the
// client reaches Redis through a proxy that adds that round trip, and the
// benchmark also reports the added round trip it measured (added-rtt-µs):
//
//	IDEM_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench BenchmarkRedis ./backends/redisstore/
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench BenchmarkRedis ./backends/redisstore/
func BenchmarkRedis(b *testing.B) { benchRedis(b, 128, idem.WithoutCoalescing()) } // every caller gets a connection

// BenchmarkRedisCoalesced is BenchmarkRedis with idem.WithCoalescing, on
// a client with go-redis's default pool (10 connections per CPU) for both
// sides: callers beyond the pool share pipelined round trips where the
// bare cycle waits for a connection (target ≥ 1.3× the bare cycle at 64
// callers; up to the pool's size the same as without coalescing).
//
//	go test -run '^$' -bench BenchmarkRedisCoalesced ./backends/redisstore/
func BenchmarkRedisCoalesced(b *testing.B) {
	benchRedis(b, 0, idem.WithCoalescing(idem.CoalesceOptions{}))
}

// benchRedis runs the benchmark on a client of poolSize connections (0:
// go-redis's default).
func benchRedis(b *testing.B, poolSize int, opts ...idem.Option) {
	client, reportRTT := benchClient(b, poolSize)
	store := newStore(b, client, Options{TakeoverGrace: time.Hour})
	engine := idem.New(store, append([]idem.Option{idem.WithRetention(time.Hour)}, opts...)...)
	b.Cleanup(func() { _ = engine.Close() })
	fp := idem.FingerprintString("bench")
	fn := func(context.Context) (idem.Response, error) { return benchResp, nil }
	encoded := idem.EncodeResponse(&benchResp)
	ctx := context.Background()
	var run atomic.Uint64 // makes the keys of every measurement unique

	viaEngine := func(key string) error {
		_, err := engine.Do(ctx, key, fp, fn)
		return err
	}
	bare := func(key string) error {
		k := keysFor(store.opts.Prefix, key)
		res, err := acquireScript.Run(ctx, client, []string{k.record, k.fence()},
			fp.String(), int64(30000), store.graceMS, store.callID(), k.slot).Slice()
		if err != nil {
			return err
		}
		if code, _ := replyInt(res, 0); code != resultApplied {
			return fmt.Errorf("bare acquire of %q: %v", key, res)
		}
		return client.HSet(ctx, k.record, fieldStatus, "completed", fieldResponse, encoded).Err()
	}

	for _, callers := range []int{1, 8, 64} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			measure(b, client, callers, run.Add(1), viaEngine) // warm up: pool, scripts
			measure(b, client, callers, run.Add(1), bare)
			for range b.N {
				var do, raw, ratio, doUS, rawUS []float64
				for i := range benchRounds {
					var d, r rates
					if i%2 == 0 {
						d = measure(b, client, callers, run.Add(1), viaEngine)
						r = measure(b, client, callers, run.Add(1), bare)
						r = r.add(measure(b, client, callers, run.Add(1), bare))
						d = d.add(measure(b, client, callers, run.Add(1), viaEngine))
					} else {
						r = measure(b, client, callers, run.Add(1), bare)
						d = measure(b, client, callers, run.Add(1), viaEngine)
						d = d.add(measure(b, client, callers, run.Add(1), viaEngine))
						r = r.add(measure(b, client, callers, run.Add(1), bare))
					}
					do, raw, ratio = append(do, d.perSec()), append(raw, r.perSec()), append(ratio, d.perSec()/r.perSec())
					doUS, rawUS = append(doUS, d.serverUS()), append(rawUS, r.serverUS())
					b.Logf("round %2d: do/s %6.0f  bare/s %6.0f  ratio %.3f", i, d.perSec(), r.perSec(), d.perSec()/r.perSec())
				}
				b.ReportMetric(median(do), "do/s")
				b.ReportMetric(median(raw), "bare/s")
				b.ReportMetric(median(ratio), "ratio")
				b.ReportMetric(median(doUS), "redis-us/do")
				b.ReportMetric(median(rawUS), "redis-us/bare")
				reportRTT(b)
			}
		})
	}
}

var benchResp = idem.Response{Status: 201, Body: []byte(`{"id":"p_1"}`)}

// rates sums measurements of one side: operations, wall-clock seconds and
// Redis CPU seconds.
type rates struct{ ops, secs, serverSecs float64 }

func (r rates) add(o rates) rates {
	return rates{r.ops + o.ops, r.secs + o.secs, r.serverSecs + o.serverSecs}
}

// perSec returns operations per second.
func (r rates) perSec() float64 { return r.ops / r.secs }

// serverUS returns Redis CPU microseconds per operation.
func (r rates) serverUS() float64 { return r.serverSecs / r.ops * 1e6 }

// median returns the middle value of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// measure runs op from callers goroutines on unique keys for benchWindow.
func measure(b *testing.B, client *redis.Client, callers int, run uint64, op func(key string) error) rates {
	runtime.GC()
	cpu0 := serverCPU(b, client)
	var (
		total  atomic.Uint64
		wg     sync.WaitGroup
		failed atomic.Bool
	)
	start := time.Now()
	stop := start.Add(benchWindow)
	for c := range callers {
		wg.Go(func() {
			prefix := strconv.FormatUint(run, 36) + "." + strconv.Itoa(c) + "."
			var n uint64
			for ; n%16 != 0 || time.Now().Before(stop); n++ {
				if err := op(prefix + strconv.FormatUint(n, 36)); err != nil {
					if failed.CompareAndSwap(false, true) {
						b.Error(err)
					}
					return
				}
			}
			total.Add(n)
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	return rates{ops: float64(total.Load()), secs: elapsed, serverSecs: serverCPU(b, client) - cpu0}
}

// serverCPU returns the CPU seconds (user + system) the Redis server has
// used, from INFO cpu.
func serverCPU(b testing.TB, client redis.UniversalClient) float64 {
	info, err := client.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		name, val, _ := strings.Cut(line, ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

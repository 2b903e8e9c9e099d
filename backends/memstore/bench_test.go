package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// BenchmarkDo measures Engine.Do on memstore next to a bare sharded map doing
// the same two transitions (claim, then complete) with no engine around it.
// "unique" gives every call a new key; "hot" sends every call to 8 keys, so
// nearly all calls replay a completed record.
func BenchmarkDo(b *testing.B) {
	for _, v := range []struct {
		name string
		op   func(keyGen) (op, func())
	}{{"engine", engineOp}, {"baseline", baselineOp}} {
		for _, k := range []struct {
			name string
			keys keyGen
		}{{"unique", uniqueKeys}, {"hot", hotKeys}} {
			b.Run(k.name+"/"+v.name, func(b *testing.B) {
				do, done := v.op(k.keys)
				defer done()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					w := workers.Add(1)
					buf := make([]byte, 0, 32)
					for i := uint64(0); pb.Next(); i++ {
						if err := do(w, i, buf); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkDoVsBaseline times the engine and the bare map with unique keys,
// one second each, alternating three times, and reports the best rate of
// each and their ratio (Do / bare), so that a passing load on the machine
// hurts both alike. The target is a ratio ≥ 0.6 at GOMAXPROCS=2.
func BenchmarkDoVsBaseline(b *testing.B) {
	for range b.N {
		var do, bare float64
		for range 3 {
			do = max(do, rate(engineOp(uniqueKeys)))
			bare = max(bare, rate(baselineOp(uniqueKeys)))
		}
		b.ReportMetric(do, "do/s")
		b.ReportMetric(bare, "bare/s")
		b.ReportMetric(do/bare, "ratio")
	}
}

// BenchmarkObserverOverhead times Do with unique keys without an observer
// and with a counting one (an atomic add per transition), first with
// idem.WithoutDurations (no clock read for the observer: overhead-%, the
// target is ≤ 5 %), then with the durations (four monotonic clock reads per
// Do: timed-overhead-%). Each figure is the median of nine ABBA rounds of
// one-second runs (overheadRounds).
//
//	go test -run '^$' -bench ObserverOverhead -benchtime 1x ./backends/memstore/
func BenchmarkObserverOverhead(b *testing.B) {
	// The counters are striped by token, as a metrics library stripes
	// its cells, so that two cores do not fight over one cache line.
	var counts [64]struct {
		n [16]atomic.Uint64
		_ [64]byte
	}
	count := idem.WithObserver(func(_ context.Context, ev idem.Event) { counts[ev.Token%64].n[ev.Transition&15].Add(1) })
	for range b.N {
		plain, observed, overhead := overheadRounds(count, idem.WithoutDurations())
		_, timed, timedOverhead := overheadRounds(count)
		b.ReportMetric(plain, "do/s")
		b.ReportMetric(observed, "observed-do/s")
		b.ReportMetric(overhead, "overhead-%")
		b.ReportMetric(timed, "timed-do/s")
		b.ReportMetric(timedOverhead, "timed-overhead-%")
	}
}

// overheadRounds measures Do with and without opts in nine rounds of
// plain, observed, observed, plain (the other way round every other round),
// so a drift in the machine's speed cancels, and returns the median rates
// and the median overhead (percent) of the rounds.
func overheadRounds(opts ...idem.Option) (plain, observed, overhead float64) {
	var plains, observeds, overheads []float64
	for r := range 9 {
		var p, o float64
		if r%2 == 0 {
			p = rate(engineOp(uniqueKeys))
			o = rate(engineOpWith(uniqueKeys, opts...)) + rate(engineOpWith(uniqueKeys, opts...))
			p += rate(engineOp(uniqueKeys))
		} else {
			o = rate(engineOpWith(uniqueKeys, opts...))
			p = rate(engineOp(uniqueKeys)) + rate(engineOp(uniqueKeys))
			o += rate(engineOpWith(uniqueKeys, opts...))
		}
		plains, observeds, overheads = append(plains, p/2), append(observeds, o/2), append(overheads, 100*(1-o/p))
	}
	for _, xs := range [][]float64{plains, observeds, overheads} {
		slices.Sort(xs)
	}
	return plains[4], observeds[4], overheads[4]
}

// op performs one claim+complete cycle for key number i of worker w.
type op func(w, i uint64, buf []byte) error

// rate runs do from GOMAXPROCS goroutines for a second and returns
// operations per second.
func rate(do op, done func()) float64 {
	defer done()
	runtime.GC()
	var total atomic.Uint64
	var wg sync.WaitGroup
	stop := time.Now().Add(time.Second)
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := workers.Add(1)
			buf := make([]byte, 0, 32)
			var i uint64
			for ; i%256 != 0 || time.Now().Before(stop); i++ {
				if err := do(w, i, buf); err != nil {
					panic(err)
				}
			}
			total.Add(i)
		}()
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}

type keyGen func(worker uint64, i uint64, buf []byte) string

var workers atomic.Uint64

func uniqueKeys(worker, i uint64, buf []byte) string {
	buf = strconv.AppendUint(buf[:0], worker, 36)
	buf = append(buf, '-')
	buf = strconv.AppendUint(buf, i, 36)
	return string(buf)
}

var hotNames = func() []string {
	s := make([]string, 8)
	for i := range s {
		s[i] = "hot-" + strconv.Itoa(i)
	}
	return s
}()

func hotKeys(_, i uint64, _ []byte) string { return hotNames[i%uint64(len(hotNames))] }

var benchResp = idem.Response{Status: 201, Body: []byte(`{"id":"p_1"}`)}

func engineOp(keys keyGen) (op, func()) { return engineOpWith(keys) }

func engineOpWith(keys keyGen, opts ...idem.Option) (op, func()) {
	store := memstore.New(memstore.Options{SweepInterval: -1})
	e := idem.New(store, opts...)
	fp := idem.FingerprintString("bench")
	fn := func(context.Context) (idem.Response, error) { return benchResp, nil }
	ctx := context.Background()
	return func(w, i uint64, buf []byte) error {
		_, err := e.Do(ctx, keys(w, i, buf), fp, fn)
		if errors.Is(err, idem.ErrInProgress) {
			return nil // hot keys: a concurrent duplicate is a valid answer
		}
		return err
	}, func() { store.Close() }
}

// bareMap is the baseline: a sharded map with a claim and a complete step,
// the least any idempotency store has to do.
type bareMap struct {
	seed   maphash.Seed
	tokens atomic.Uint64
	shards [64]struct {
		sync.Mutex
		m map[string]*bareRec
		_ [40]byte
	}
}

type bareRec struct {
	done  bool
	token uint64
	fp    idem.Fingerprint
	resp  *idem.Response
}

func (m *bareMap) claim(key string, fp idem.Fingerprint) (uint64, *bareRec) {
	sh := &m.shards[maphash.String(m.seed, key)&63]
	sh.Lock()
	defer sh.Unlock()
	if r := sh.m[key]; r != nil {
		return 0, r
	}
	t := m.tokens.Add(1)
	sh.m[key] = &bareRec{token: t, fp: fp}
	return t, nil
}

func (m *bareMap) complete(key string, token uint64, resp idem.Response) error {
	sh := &m.shards[maphash.String(m.seed, key)&63]
	sh.Lock()
	defer sh.Unlock()
	r := sh.m[key]
	if r == nil || r.token != token || r.done {
		return fmt.Errorf("lost %s", key)
	}
	sh.m[key] = &bareRec{done: true, token: token, fp: r.fp, resp: &resp}
	return nil
}

func baselineOp(keys keyGen) (op, func()) {
	m := &bareMap{seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].m = make(map[string]*bareRec)
	}
	fp := idem.FingerprintString("bench")
	return func(w, i uint64, buf []byte) error {
		k := keys(w, i, buf)
		tok, rec := m.claim(k, fp)
		if rec != nil {
			return nil // a replay: nothing more to do
		}
		return m.complete(k, tok, benchResp)
	}, func() {}
}

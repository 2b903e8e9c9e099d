package checker

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/idembench/idembench/history"
)

// heapSampler records the peak of live heap objects while it runs.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		s.peak = max(s.peak, sample[0].Value.Uint64())
	}
	read()
	s.done.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	})
	return s
}

func (s *heapSampler) Stop() uint64 {
	close(s.stop)
	s.done.Wait()
	return s.peak
}

// BenchmarkCheck1M checks a legal 1,000,000-op history over 100,000 keys
// (executions with their lease grants, take-overs and completions, effects,
// in_progress duplicates, replays, mismatches, unknown outcomes). Targets
// on a 2-core machine with the decision procedure: at most 1 s per check
// and at most 1 GiB peak heap, history included. The "witness" variant
// turns the decision procedure off (the greedy witness and Porcupine
// decide), the "porcupine" variant the witness too, so that every key that
// is not totally ordered goes through Porcupine. Run with:
//
//	go test -run '^$' -bench Check1M -benchtime 3x ./checker/
func BenchmarkCheck1M(b *testing.B) {
	h := genHistory(1, genOptions{ops: 1_000_000, keys: 100_000, unknownPct: 0.1})
	for _, v := range []struct {
		name            string
		decide, witness bool
	}{{"decide", true, true}, {"witness", false, true}, {"porcupine", false, false}} {
		b.Run(v.name, func(b *testing.B) {
			defer func(d, w bool) { useDecide, useWitness = d, w }(useDecide, useWitness)
			useDecide, useWitness = v.decide, v.witness
			benchCheck(b, h)
		})
	}
}

// BenchmarkHotKey200k checks one key with 200,000 ops (replays, in_progress
// answers, unknown outcomes: see hotKeyHistory). Target: decided (ok, no
// search) in at most 1 s. Run with:
//
//	go test -run '^$' -bench HotKey200k -benchtime 3x ./checker/
func BenchmarkHotKey200k(b *testing.B) {
	benchCheck(b, hotKeyHistory(200_000, 1))
}

func benchCheck(b *testing.B, h *history.History) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	totalAlloc := ms.TotalAlloc
	sampler := startHeapSampler()
	cpu0 := cpuTime()
	var rep Report
	for b.Loop() {
		rep = Check(h, Options{})
		if rep.Verdict != VerdictOK {
			b.Fatalf("verdict %s on a legal history:%s", rep.Verdict, summarize(rep))
		}
	}
	peak := sampler.Stop()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/check")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		// Wall time on a shared machine counts other processes' load; the
		// process's CPU time per check does not.
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/check")
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base)/(1<<20), "history-MiB")
	b.ReportMetric(float64(ms.TotalAlloc-totalAlloc)/float64(b.N)/(1<<20), "alloc-MiB/check")
	b.ReportMetric(float64(rep.Stats.SearchedKeys), "searched-keys")
}

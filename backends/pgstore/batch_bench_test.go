package pgstore

import (
	"testing"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// BenchmarkBatch prints messages/s of 8 consumers with Do per message and
// with DoBatch over 100 messages, and their ratio (target ≥ 5). With
// IDEM_BENCH_RTT (such as 500us) the pool reaches PostgreSQL through a
// proxy that adds that round trip (see BenchmarkPostgres):
//
//	go test -run '^$' -bench Batch -benchtime 1x ./backends/pgstore/
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench Batch -benchtime 1x ./backends/pgstore/
func BenchmarkBatch(b *testing.B) {
	s, reportRTT := benchStore(b, Options{})
	storetest.BenchBatch(b, s, nil, func(storetest.BatchRates) { reportRTT(b) })
}

// BenchmarkLoneCallerCoalesced prints the p50 latency of a single caller's
// Do with the plain engine and with idem.WithCoalescing on one store, and
// their ratio (target ≤ 1.10):
//
//	go test -run '^$' -bench LoneCaller -benchtime 1x ./backends/pgstore/
func BenchmarkLoneCallerCoalesced(b *testing.B) {
	s, reportRTT := benchStore(b, Options{})
	storetest.BenchLoneCaller(b, s)
	reportRTT(b)
}

// BenchmarkCoalescing prints, at 1 to 256 concurrent callers, Do calls per
// second with the plain engine and with idem.WithCoalescing on one store
// (a pool of 32 connections), and their ratio (target ≥ 0.97 everywhere):
//
//	go test -run '^$' -bench Coalescing -benchtime 1x ./backends/pgstore/
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench Coalescing -benchtime 1x ./backends/pgstore/
func BenchmarkCoalescing(b *testing.B) {
	s, reportRTT := benchStore(b, Options{})
	storetest.BenchCoalescing(b, s, reportRTT, idem.WithCoalescing(idem.CoalesceOptions{}))
}

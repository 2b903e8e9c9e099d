package redisstore

import (
	"testing"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// BenchmarkBatch prints messages/s of 8 consumers with Do per message and
// with DoBatch over 100 messages, and their ratio (target ≥ 5). It also
// prints the Redis server's CPU time per message of each side (INFO cpu),
// the share of a core Redis used while Do ran, and the CPU budget per
// batched message that 5× would leave Redis (1 / (5 × do-msg/s)): Redis
// runs out of its core while batching, so 5× is reached only when the
// batched cost is within that budget (the ratio is at most 5 × budget ÷
// cost).
//
// With IDEM_BENCH_RTT (such as 500us) the client reaches Redis through a
// proxy that adds that round trip (see BenchmarkRedis):
//
//	go test -run '^$' -bench Batch -benchtime 1x ./backends/redisstore/
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench Batch -benchtime 1x ./backends/redisstore/
func BenchmarkBatch(b *testing.B) {
	client, reportRTT := benchClient(b, 0)
	meter := func() (float64, error) { return serverCPU(b, client), nil }
	storetest.BenchBatch(b, newStore(b, client, Options{}), meter, func(m storetest.BatchRates) {
		b.ReportMetric(m.PerMessageCost*1e6, "do-redis-µs/msg")
		b.ReportMetric(m.BatchedCost*1e6, "batch-redis-µs/msg")
		b.ReportMetric(m.PerMessageLoad, "do-redis-cores")
		b.ReportMetric(1e6/(5*m.PerMessage), "5x-budget-µs/msg")
		reportRTT(b)
	})
}

// BenchmarkLoneCallerCoalesced prints the p50 latency of a single caller's
// Do with the plain engine and with idem.WithCoalescing on one store, and
// their ratio (target ≤ 1.10):
//
//	go test -run '^$' -bench LoneCaller -benchtime 1x ./backends/redisstore/
func BenchmarkLoneCallerCoalesced(b *testing.B) {
	client, reportRTT := benchClient(b, 0)
	storetest.BenchLoneCaller(b, newStore(b, client, Options{}))
	reportRTT(b)
}

// BenchmarkCoalescing prints, at 1 to 256 concurrent callers, Do calls per
// second with the plain engine and with idem.WithCoalescing on one store
// (go-redis's default pool), and their ratio (target ≥ 0.97 everywhere):
//
//	go test -run '^$' -bench Coalescing -benchtime 1x ./backends/redisstore/
//	IDEM_BENCH_RTT=500us go test -run '^$' -bench Coalescing -benchtime 1x ./backends/redisstore/
func BenchmarkCoalescing(b *testing.B) {
	client, reportRTT := benchClient(b, 0)
	storetest.BenchCoalescing(b, newStore(b, client, Options{}), reportRTT, idem.WithCoalescing(idem.CoalesceOptions{}))
}

package pgstore

import (
	"testing"

	"github.com/idembench/idembench/backends/storetest"
)

// BenchmarkBatch prints messages/s of 8 consumers with Do per message and
// with DoBatch over 100 messages, and their ratio (target ≥ 5):
//
//	go test -run '^$' -bench Batch -benchtime 1x ./backends/pgstore/
func BenchmarkBatch(b *testing.B) {
	storetest.BenchBatch(b, newStore(b, Options{}), nil, nil)
}

// BenchmarkLoneCallerCoalesced prints the p50 latency of a single caller's
// Do with the plain engine and with idem.WithCoalescing on one store, and
// their ratio (target ≤ 1.10):
//
//	go test -run '^$' -bench LoneCaller -benchtime 1x ./backends/pgstore/
func BenchmarkLoneCallerCoalesced(b *testing.B) {
	storetest.BenchLoneCaller(b, newStore(b, Options{}))
}

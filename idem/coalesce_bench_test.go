package idem_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
)

// BenchmarkCoalescingBelowThePool measures what coalescing adds to a Do
// that it does not batch (fewer calls under way than MaxInFlight, the
// case of every concurrency up to the store's pool): the gate's lock and
// counter on the claim and on the outcome write. On memstore, where a Do
// costs about a microsecond, the difference between the two
// sub-benchmarks is that cost; against a Do on Redis or PostgreSQL
// (≥ 100 µs) it is the fraction below the pool.
//
//	go test -run '^$' -bench CoalescingBelowThePool -benchtime 200000x -count 6 ./idem/
func BenchmarkCoalescingBelowThePool(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []idem.Option
	}{
		{"plain", nil},
		{"coalescing", []idem.Option{idem.WithCoalescing(idem.CoalesceOptions{MaxInFlight: 1 << 20})}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := idem.New(memstore.New(memstore.Options{}), append([]idem.Option{idem.WithHeartbeat(-1)}, tc.opts...)...)
			defer e.Close()
			fp := idem.FingerprintString("bench")
			fn := func(context.Context) (idem.Response, error) { return idem.Response{Status: 200}, nil }
			var seq atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := e.Do(ctx, "k"+strconv.FormatInt(seq.Add(1), 36), fp, fn); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

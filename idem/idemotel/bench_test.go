package idemotel_test

import (
	"context"
	"fmt"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemotel"
)

// BenchmarkDo measures Do on the memory store (a first execution, then a
// replay of the same key per iteration) without an observer and with the
// OpenTelemetry observer on an SDK meter provider.
func BenchmarkDo(b *testing.B) {
	for _, withOtel := range []bool{false, true} {
		b.Run(fmt.Sprintf("otel=%v", withOtel), func(b *testing.B) {
			store := memstore.New(memstore.Options{SweepInterval: -1})
			defer store.Close()
			var opts []idem.Option
			if withOtel {
				tel, err := idemotel.New(idemotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())), Backend: "memory"})
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, idem.WithObserver(tel.Observer()))
			}
			eng := idem.New(store, opts...)
			defer eng.Close()
			ctx := context.Background()
			ok := func(context.Context) (idem.Response, error) { return idem.Response{Status: 201}, nil }
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("k%d", i)
				i++
				if _, err := eng.Do(ctx, key, fpA, ok); err != nil {
					b.Fatal(err)
				}
				if _, err := eng.Do(ctx, key, fpA, ok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

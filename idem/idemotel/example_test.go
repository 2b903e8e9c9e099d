package idemotel_test

import (
	"context"
	"fmt"
	"sort"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idembench/idembench/backends/memstore"
	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemotel"
)

func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	tel, err := idemotel.New(idemotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Backend: "memory"})
	if err != nil {
		panic(err)
	}
	store := memstore.New(memstore.Options{})
	defer store.Close()
	eng := idem.New(store, idem.WithObserver(tel.Observer()))

	fp := idem.FingerprintString("POST", "/payments", `{"amount":100}`)
	pay := func(context.Context) (idem.Response, error) { return idem.Response{Status: 201}, nil }
	for range 3 {
		_, _ = eng.Do(context.Background(), "order-1", fp, pay) // one execution, two replays
	}

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				tr, _ := p.Attributes.Value("transition")
				oc, _ := p.Attributes.Value("outcome")
				lines = append(lines, fmt.Sprintf("%s transition=%s outcome=%s %d", m.Name, tr.AsString(), oc.AsString(), p.Value))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// idem.transitions transition=acquired outcome=ok 1
	// idem.transitions transition=completed outcome=ok 1
	// idem.transitions transition=replayed outcome=completed 2
}

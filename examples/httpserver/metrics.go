package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/idembench/idembench/idem"
	"github.com/idembench/idembench/idem/idemotel"
)

// metrics exposes the engine's transitions (idem/idemotel) on /metrics in
// the Prometheus text format, through the OpenTelemetry Prometheus
// exporter and a registry of its own.
type metrics struct {
	provider  *sdkmetric.MeterProvider
	telemetry *idemotel.Telemetry
	handler   http.Handler
}

// newMetrics sets up the meter provider and the /metrics handler; backend
// is the value of the backend attribute.
func newMetrics(backend string) (*metrics, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	tel, err := idemotel.New(idemotel.Options{MeterProvider: provider, Backend: backend})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metrics{provider: provider, telemetry: tel, handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}, nil
}

// engineOption installs the observer on the engine.
func (m *metrics) engineOption() idem.Option { return idem.WithObserver(m.telemetry.Observer()) }

// mount serves GET /metrics and everything else with api.
func (m *metrics) mount(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler)
	mux.Handle("/", api)
	return mux
}

// close shuts the meter provider down.
func (m *metrics) close(ctx context.Context) error { return m.provider.Shutdown(ctx) }

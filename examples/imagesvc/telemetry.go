package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelruntime "go.opentelemetry.io/contrib/instrumentation/runtime"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/promexport"
)

// telemetry is what the service exposes on /metrics, all through one
// Prometheus registry whose every series carries the track's gray_status
// and pool_mode:
//
//   - OpenTelemetry's metrics through its Prometheus exporter: otelhttp's
//     http.server.request.duration (http_server_request_duration_seconds)
//     and the runtime instrumentation's go.memory.allocated
//     (go_memory_allocated_bytes_total);
//   - client_golang's process collector (process_cpu_seconds_total, for the
//     CPU-per-request SLI);
//   - the instrument pools (syncpool_*_total{pool}).
//
// The rules that read these are deploy/prometheus/poolparity-semconv.rules.yml
// (rules.http.metrics=semconv, rules.runtime.metrics=otel in the chart).
type telemetry struct {
	meters  *sdkmetric.MeterProvider
	handler http.Handler
}

func newTelemetry(track instrument.Track, pools *instrument.Registry) (*telemetry, error) {
	reg := prometheus.NewRegistry()
	tracked := promexport.WithTrack(reg, track)
	exporter, err := otelprom.New(otelprom.WithRegisterer(tracked))
	if err != nil {
		return nil, fmt.Errorf("creating the OpenTelemetry Prometheus exporter: %w", err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	if err := otelruntime.Start(otelruntime.WithMeterProvider(meters)); err != nil {
		return nil, fmt.Errorf("starting the runtime instrumentation: %w", err)
	}
	for _, c := range []prometheus.Collector{
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		promexport.NewCollector(pools),
	} {
		if err := tracked.Register(c); err != nil {
			return nil, fmt.Errorf("registering a collector: %w", err)
		}
	}
	return &telemetry{meters: meters, handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})}, nil
}

// shutdown stops the meter provider.
func (t *telemetry) shutdown(ctx context.Context) error {
	if err := t.meters.Shutdown(ctx); err != nil {
		return fmt.Errorf("stopping the meter provider: %w", err)
	}
	return nil
}

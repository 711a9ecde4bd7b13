package otelexport_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/instrumenttest"
	"github.com/poolparity/poolparity/instrument/otelexport"
)

// point is one data point, flattened for comparison.
type point struct {
	metric, unit, attrs string
	value               int64
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s: data is %T, want metricdata.Sum[int64]", m.Name, m.Data)
			}
			if !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
				t.Errorf("%s: monotonic %v, temporality %v; want a cumulative monotonic sum", m.Name, sum.IsMonotonic, sum.Temporality)
			}
			for _, dp := range sum.DataPoints {
				var kv []string
				for _, a := range dp.Attributes.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.String())
				}
				out = append(out, point{m.Name, m.Unit, strings.Join(kv, ","), dp.Value})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].metric != out[j].metric {
			return out[i].metric < out[j].metric
		}
		return out[i].attrs < out[j].attrs
	})
	return out
}

func TestRegisterReportsThroughManualReader(t *testing.T) {
	tests := []struct {
		name string
		opts []otelexport.Option
		json string // attributes of the json_buffer points
		rep  string // attributes of the report_scratch points
	}{
		{"default options", nil, "pool=json_buffer", "pool=report_scratch"},
		{"a custom pool attribute and extra attributes",
			[]otelexport.Option{
				otelexport.WithPoolAttribute("pool_name"),
				otelexport.WithAttributes(attribute.String("gray_status", "true")),
				otelexport.WithMeterName("test"),
			},
			"gray_status=true,pool_name=json_buffer", "gray_status=true,pool_name=report_scratch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())

			reg, err := otelexport.Register(mp, instrumenttest.SampleRegistry(t), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			want := []point{
				{"syncpool.dirty", "{dirty}", tt.json, 1},
				{"syncpool.dirty", "{dirty}", tt.rep, 0},
				{"syncpool.drops", "{drop}", tt.json, 1},
				{"syncpool.drops", "{drop}", tt.rep, 5},
				{"syncpool.gets", "{get}", tt.json, 10},
				{"syncpool.gets", "{get}", tt.rep, 5},
				{"syncpool.misses", "{miss}", tt.json, 2},
				{"syncpool.misses", "{miss}", tt.rep, 5},
				{"syncpool.puts", "{put}", tt.json, 7},
				{"syncpool.puts", "{put}", tt.rep, 0},
			}
			got := collect(t, reader)
			if len(got) != len(want) {
				t.Fatalf("got %d points, want %d:\n%+v", len(got), len(want), got)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("point %d = %+v, want %+v", i, got[i], want[i])
				}
			}

			if err := reg.Unregister(); err != nil {
				t.Fatalf("Unregister: %v", err)
			}
			if got := collect(t, reader); len(got) != 0 {
				t.Errorf("after Unregister got %d points, want none: %+v", len(got), got)
			}
		})
	}
}

func TestRegisterReadsLivePools(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	r := instrument.NewRegistry()
	if _, err := otelexport.Register(mp, r); err != nil {
		t.Fatal(err)
	}
	p, err := instrument.NewBufferPool("json_buffer", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		p.Put(p.Get())
	}
	for _, pt := range collect(t, reader) {
		if pt.metric == otelexport.GetsName && pt.value != 5 {
			t.Errorf("syncpool.gets = %d, want 5", pt.value)
		}
		if pt.metric == otelexport.PutsName && pt.value != 5 {
			t.Errorf("syncpool.puts = %d, want 5", pt.value)
		}
	}
}

func TestRegisterArguments(t *testing.T) {
	if reg, err := otelexport.Register(nil, instrument.NewRegistry()); err != nil {
		t.Errorf("Register with a nil MeterProvider = %v, want a no-op registration", err)
	} else if err := reg.Unregister(); err != nil {
		t.Errorf("Unregister of a no-op registration = %v", err)
	}
	if _, err := otelexport.Register(nil, nil); err == nil {
		t.Error("Register with a nil Snapshotter succeeded, want an error")
	}
}

// TestPrometheusTranslationGivesTheDesignNames runs the instruments through
// the OpenTelemetry Prometheus exporter with its default translation and
// checks the result is exactly what instrument/promexport emits.
func TestPrometheusTranslationGivesTheDesignNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	if _, err := otelexport.Register(mp, instrumenttest.SampleRegistry(t)); err != nil {
		t.Fatal(err)
	}
	const want = `
# HELP syncpool_dirty_total Objects taken from the sync.Pool that were not as Put left them: they failed the pool's WithCheck check (state its reset left behind) or their WithPoison poison was overwritten (a write after Put). Each was dropped and replaced by a fresh one.
# TYPE syncpool_dirty_total counter
syncpool_dirty_total{pool="json_buffer"} 1
syncpool_dirty_total{pool="report_scratch"} 0
# HELP syncpool_drops_total Objects passed to Put that the pool's keep policy refused (for example over the size cap).
# TYPE syncpool_drops_total counter
syncpool_drops_total{pool="json_buffer"} 1
syncpool_drops_total{pool="report_scratch"} 5
# HELP syncpool_gets_total Calls to Get on the sync.Pool.
# TYPE syncpool_gets_total counter
syncpool_gets_total{pool="json_buffer"} 10
syncpool_gets_total{pool="report_scratch"} 5
# HELP syncpool_misses_total Gets on the sync.Pool that were not served from the pool (New was called, or the pool was empty).
# TYPE syncpool_misses_total counter
syncpool_misses_total{pool="json_buffer"} 2
syncpool_misses_total{pool="report_scratch"} 5
# HELP syncpool_puts_total Objects accepted back into the sync.Pool by Put.
# TYPE syncpool_puts_total counter
syncpool_puts_total{pool="json_buffer"} 7
syncpool_puts_total{pool="report_scratch"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

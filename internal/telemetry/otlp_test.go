package telemetry_test

import (
	"bytes"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/poolparity/poolparity/internal/telemetry"
)

func TestSignalURLs(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		o                    telemetry.OTLP
		wantTraces, wantMets string
	}{
		{"nothing set exports nothing", telemetry.OTLP{}, "", ""},
		{"the base URL gets the signal paths", telemetry.OTLP{Endpoint: "http://c:4318"}, "http://c:4318/v1/traces", "http://c:4318/v1/metrics"},
		{"a trailing slash is not doubled", telemetry.OTLP{Endpoint: "http://c:4318/"}, "http://c:4318/v1/traces", "http://c:4318/v1/metrics"},
		{"a signal URL replaces the derived one", telemetry.OTLP{Endpoint: "http://c:4318", MetricsEndpoint: "http://m/x"}, "http://c:4318/v1/traces", "http://m/x"},
		{"a signal URL alone switches only its signal on", telemetry.OTLP{TracesEndpoint: "http://t/y"}, "http://t/y", ""},
		{"over grpc the base URL is used as it is", telemetry.OTLP{Protocol: telemetry.ProtocolGRPC, Endpoint: "http://c:4317"}, "http://c:4317", "http://c:4317"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.TracesURL(); got != tt.wantTraces {
				t.Errorf("TracesURL = %q, want %q", got, tt.wantTraces)
			}
			if got := tt.o.MetricsURL(); got != tt.wantMets {
				t.Errorf("MetricsURL = %q, want %q", got, tt.wantMets)
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", map[string]string{}, false},
		{"a=1", map[string]string{"a": "1"}, false},
		{" authorization = Bearer%20x , tenant=a,", map[string]string{"authorization": "Bearer x", "tenant": "a"}, false},
		{"k=a=b", map[string]string{"k": "a=b"}, false},
		{"novalue", nil, true},
		{"=v", nil, true},
		{"k=%zz", nil, true},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := telemetry.ParseHeaders(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if !tt.wantErr && !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExportErrorsCountsAllAndLogsAtABoundedRate(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	e, err := telemetry.NewExportErrors(reg, slog.New(slog.NewJSONHandler(&logs, nil)), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		e.Record(telemetry.SignalMetrics, errors.New("connection refused"))
	}
	e.Record(telemetry.SignalTraces, errors.New("connection refused"))
	e.Handle(errors.New("sdk trouble"))
	if n := strings.Count(logs.String(), "\n"); n != 3 {
		t.Errorf("%d log lines for 102 failures in one interval, want 3 (one per signal):\n%s", n, logs.String())
	}
	want := `
# HELP otlp_export_failures_total OTLP export requests that failed (endpoint unreachable, refused or too slow), by signal.
# TYPE otlp_export_failures_total counter
otlp_export_failures_total{signal="metrics"} 100
otlp_export_failures_total{signal="traces"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), telemetry.ExportFailuresName); err != nil {
		t.Error(err)
	}
}

func TestValidateEndpoint(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:4318", "https://c.example/otlp"} {
		if err := telemetry.ValidateEndpoint(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"127.0.0.1:4318", "grpc://c:4317", "http://", "::"} {
		if err := telemetry.ValidateEndpoint(u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
}

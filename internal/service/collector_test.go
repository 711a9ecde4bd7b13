package service_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/service"
	"github.com/poolparity/poolparity/internal/testtool"
)

// collectorConfig is the sidecar configuration that the chart and the demo
// use; the test runs the collector with exactly this file.
const collectorConfig = "../../deploy/helm/poolparity/files/otel-collector.yaml"

// freePort returns a loopback address with a port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCollector runs bin/otelcol (or $OTELCOL) with the sidecar
// configuration and returns its OTLP/HTTP URL and its Prometheus address.
func startCollector(t *testing.T) (otlpURL, promAddr string) {
	t.Helper()
	bin := os.Getenv("OTELCOL")
	if bin == "" {
		bin = "../../bin/otelcol"
	}
	if _, err := os.Stat(bin); err != nil {
		testtool.SkipOrFail(t, "no collector at %s (run hack/install-tools.sh otelcol): %v", bin, err)
	}
	otlp, prom := freePort(t), freePort(t)
	traces := newTraceSink(t)
	cmd := exec.Command(bin, "--config", collectorConfig)
	cmd.Env = append(os.Environ(), "OTELCOL_OTLP_HTTP="+otlp, "OTELCOL_PROMETHEUS="+prom, "OTELCOL_TRACES_ENDPOINT="+traces)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("collector log:\n%s", logs.String())
		}
	})
	for i := 0; ; i++ {
		if resp, err := http.Get("http://" + prom + "/metrics"); err == nil {
			resp.Body.Close()
			break
		}
		if i == 100 {
			t.Fatalf("collector did not open %s in 10s:\n%s", prom, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "http://" + otlp, prom
}

// newTraceSink is where the collector forwards traces: a receiver that
// accepts anything.
func newTraceSink(t *testing.T) string {
	_, url := newReceiver(t)
	return url
}

func parseFamilies(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(r)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// labelSets lists the distinct sets of label names of a family's series,
// leaving out job and instance, which the scraper sets.
func labelSets(mf *dto.MetricFamily) []string {
	seen := map[string]bool{}
	for _, m := range mf.Metric {
		var names []string
		for _, l := range m.Label {
			if l.GetName() != "job" && l.GetName() != "instance" {
				names = append(names, l.GetName())
			}
		}
		sort.Strings(names)
		seen[strings.Join(names, ",")] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOTLPPathSeriesMatchMetricsEndpoint runs the service against the real
// collector built by hack/install-tools.sh, with the sidecar's own
// configuration, and checks that the collector's Prometheus output has
// every family of /metrics with the same type and label names, and the
// same values for the request counters.
func TestOTLPPathSeriesMatchMetricsEndpoint(t *testing.T) {
	otlpURL, promAddr := startCollector(t)
	cfg := config.Default()
	cfg.PoolMode = config.ModePooled
	cfg.GrayStatus = "true"
	cfg.OTLPEndpoint = otlpURL
	s, err := service.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	exerciseAllRoutes(t, s.Handler())
	if err := s.Close(); err != nil { // the final push
		t.Fatal(err)
	}
	direct := parseFamilies(t, bytes.NewReader(scrape(t, s.Handler())))

	// The batch processor holds points up to 200ms; wait for the last push.
	var viaOTLP map[string]*dto.MetricFamily
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + promAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		viaOTLP = parseFamilies(t, resp.Body)
		resp.Body.Close()
		if counter(viaOTLP, "http_requests_total", "route", "/api/v1/items/{id}", "method", "PUT") ==
			counter(direct, "http_requests_total", "route", "/api/v1/items/{id}", "method", "PUT") {
			break
		}
		if i == 50 {
			t.Fatal("the collector never showed the final push")
		}
		time.Sleep(100 * time.Millisecond)
	}

	for name, want := range direct {
		t.Run(name, func(t *testing.T) {
			got, ok := viaOTLP[name]
			if !ok {
				t.Fatalf("missing on the OTLP path")
			}
			if got.GetType() != want.GetType() {
				t.Errorf("type %v on the OTLP path, %v on /metrics", got.GetType(), want.GetType())
			}
			if g, w := labelSets(got), labelSets(want); !slices.Equal(g, w) {
				t.Errorf("label names %v on the OTLP path, %v on /metrics", g, w)
			}
			switch want.GetType() {
			case dto.MetricType_COUNTER:
				if !strings.HasSuffix(name, "_total") {
					t.Errorf("counter without _total")
				}
			case dto.MetricType_HISTOGRAM:
				for _, m := range got.Metric {
					h := m.GetHistogram()
					if len(h.GetBucket()) == 0 || h.SampleCount == nil || h.SampleSum == nil {
						t.Fatalf("histogram series %v lacks buckets (le), _sum or _count", m.Label)
					}
				}
			}
		})
	}
	for _, route := range []string{"/api/v1/items/{id}", "/api/v1/items", "/api/v1/report"} {
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			g := counter(viaOTLP, "http_requests_total", "route", route, "method", method)
			w := counter(direct, "http_requests_total", "route", route, "method", method)
			if g != w {
				t.Errorf("http_requests_total{route=%q,method=%q}: %v on the OTLP path, %v on /metrics", route, method, g, w)
			}
		}
	}
	for _, pool := range []string{"json_buffer", "request_scratch"} {
		g, w := counter(viaOTLP, "syncpool_gets_total", "pool", pool), counter(direct, "syncpool_gets_total", "pool", pool)
		if g != w || w == 0 {
			t.Errorf("syncpool_gets_total{pool=%q}: %v on the OTLP path, %v on /metrics", pool, g, w)
		}
	}
}

// counter sums the counter family name over the series whose labels
// include every given name/value pair.
func counter(mfs map[string]*dto.MetricFamily, name string, kv ...string) float64 {
	mf, ok := mfs[name]
	if !ok {
		return -1
	}
	var sum float64
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			match = match && have[kv[i]] == kv[i+1]
		}
		if match {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

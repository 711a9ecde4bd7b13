package dashboards_test

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/extra/redisprometheus/v9"
	"github.com/redis/go-redis/v9"

	"github.com/poolparity/poolparity/dashboards"
	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/promexport"
	"github.com/poolparity/poolparity/internal/server"
)

type fakePools struct{}

func (fakePools) Snapshot() []instrument.PoolStats {
	return []instrument.PoolStats{{Name: "json_buffer"}, {Name: "report_buffer"}}
}

type fakeRedis struct{}

func (fakeRedis) PoolStats() *redis.PoolStats {
	return &redis.PoolStats{Hits: 3, Misses: 1, TotalConns: 2, IdleConns: 1}
}

// wiring describes how a service registers its metrics.
type wiring struct {
	constLabels    bool
	redisNamespace string
	runtimeOptIns  bool
}

// reference is the wiring the rules and dashboards assume (tell the service to match it).
var reference = wiring{constLabels: true, redisNamespace: "redis", runtimeOptIns: true}

// expose registers the service's metric families the way w says and returns the text exposition.
func expose(t *testing.T, w wiring) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	var r prometheus.Registerer = reg
	if w.constLabels {
		r = prometheus.WrapRegistererWith(prometheus.Labels{"gray_status": "true", "pool_mode": "pooled"}, reg)
	}
	// The service's own request metrics (http_requests_total, http_request_duration_seconds,
	// http_response_size_bytes), registered as the service registers them.
	rec, err := server.NewPromRecorder(r)
	if err != nil {
		t.Fatalf("registering the request metrics: %v", err)
	}
	rec.ObserveRequest("GET", server.RouteItem, 200, 10*time.Millisecond, 512)
	var goc prometheus.Collector
	if w.runtimeOptIns {
		goc = collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.MetricsGC,
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/.*`)},
		))
	} else {
		goc = collectors.NewGoCollector()
	}
	for _, c := range []prometheus.Collector{
		promexport.NewCollector(fakePools{}),
		redisprometheus.NewCollector(w.redisNamespace, "", fakeRedis{}),
		goc,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := r.Register(c); err != nil {
			t.Fatalf("registering: %v", err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encoding: %v", err)
		}
	}
	return buf.Bytes()
}

// TestCheckExposition proves the series list against the real libraries: client_golang v1.25.0's
// Go and process collectors, go-redis' redisprometheus collector and instrument/promexport.
func TestCheckExposition(t *testing.T) {
	tests := []struct {
		name    string
		wiring  wiring
		wantErr []string
	}{
		{name: "the reference wiring exposes every listed family", wiring: reference},
		{
			name:    "another redis namespace misses the redis_pool_* names",
			wiring:  wiring{constLabels: true, redisNamespace: "goredis", runtimeOptIns: true},
			wantErr: []string{"redis_pool_hit_total (counter) is missing"},
		},
		{
			name:    "the Go collector without the runtime/metrics opt-ins misses the GC names",
			wiring:  wiring{constLabels: true, redisNamespace: "redis"},
			wantErr: []string{"go_gc_heap_allocs_bytes_total (counter) is missing", "go_cpu_classes_gc_total_cpu_seconds_total (counter) is missing"},
		},
		{
			name:    "a registry without the track's constant labels fails",
			wiring:  wiring{redisNamespace: "redis", runtimeOptIns: true},
			wantErr: []string{"http_requests_total has a series without gray_status and pool_mode"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dashboards.CheckExposition(bytes.NewReader(expose(t, tt.wiring)))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
	t.Run("a type mismatch is reported", func(t *testing.T) {
		err := dashboards.CheckExposition(strings.NewReader("# TYPE http_requests_total gauge\nhttp_requests_total{gray_status=\"true\",pool_mode=\"pooled\"} 1\n"))
		if err == nil || !strings.Contains(err.Error(), "http_requests_total is a gauge, want a counter") {
			t.Errorf("got %v", err)
		}
	})
}

// TestLiveScrape compares a running service's /metrics with the list when POOLPARITY_METRICS_URL
// is set (e.g. http://127.0.0.1:8080/metrics after one API request); it is skipped otherwise.
func TestLiveScrape(t *testing.T) {
	url := os.Getenv("POOLPARITY_METRICS_URL")
	if url == "" {
		t.Skip("POOLPARITY_METRICS_URL is not set")
	}
	resp, err := http.Get(url) //nolint:gosec // a URL the developer passes in
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s", url, resp.Status)
	}
	if err := dashboards.CheckExposition(resp.Body); err != nil {
		t.Error(err)
	}
}

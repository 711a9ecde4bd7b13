package service_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/redistest"
	"github.com/poolparity/poolparity/internal/server/servertest"
	"github.com/poolparity/poolparity/internal/service"
)

func newService(t *testing.T, mod func(*config.Config)) *service.Service {
	t.Helper()
	cfg := config.Default()
	cfg.RedisAddr = redistest.Addr(t)
	cfg.PoolMode = config.ModePooled
	cfg.GrayStatus = "true"
	if mod != nil {
		mod(&cfg)
	}
	s, err := service.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func do(t *testing.T, h http.Handler, method, target, body string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	return rec.Code
}

// exerciseAllRoutes sends at least one request to every route, including
// the error paths, so that every label combination a test cares about
// exists.
func exerciseAllRoutes(t *testing.T, h http.Handler) {
	t.Helper()
	for _, r := range []struct{ method, target, body string }{
		{"PUT", "/api/v1/items/svc-1", `{"name":"one","tags":["a"],"payload":"hello pool"}`},
		{"PUT", "/api/v1/items/svc-2", `{"name":"two","payload":"hello buffer"}`},
		{"PUT", "/api/v1/items/svc-3", `{"name":`},
		{"GET", "/api/v1/items/svc-1", ""},
		{"GET", "/api/v1/items/nope", ""},
		{"DELETE", "/api/v1/items/svc-2", ""},
		{"POST", "/api/v1/items/svc-1", ""},
		{"GET", "/api/v1/items?limit=10", ""},
		{"GET", "/api/v1/report?n=10", ""},
		{"GET", "/healthz", ""},
		{"GET", "/readyz", ""},
		{"GET", "/no/such/route", ""},
		{"GET", "/metrics", ""},
	} {
		do(t, h, r.method, r.target, r.body)
	}
}

func scrape(t *testing.T, h http.Handler) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	return rec.Body.Bytes()
}

func TestMetricsEndpoint(t *testing.T) {
	for _, mode := range []string{config.ModePooled, config.ModeUnpooled} {
		t.Run(mode, func(t *testing.T) {
			s := newService(t, func(c *config.Config) { c.PoolMode = mode })
			exerciseAllRoutes(t, s.Handler())
			body := scrape(t, s.Handler())

			problems, err := promlint.New(bytes.NewReader(body)).Lint()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}

			parser := expfmt.NewTextParser(model.UTF8Validation)
			families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			series := 0
			for name, mf := range families {
				for _, m := range mf.GetMetric() {
					labels := map[string]string{}
					for _, lp := range m.GetLabel() {
						labels[lp.GetName()] = lp.GetValue()
					}
					if labels["gray_status"] != "true" || labels["pool_mode"] != mode {
						t.Errorf("%s%v lacks gray_status=\"true\", pool_mode=%q", name, labels, mode)
					}
				}
				series += servertest.Series(mf)
			}
			t.Logf("%d series in %d families", series, len(families))
			if series > 300 {
				t.Errorf("%d series after exercising every route, want <= 300", series)
			}
			for _, name := range []string{
				"http_requests_total", "http_request_duration_seconds",
				"go_gc_heap_allocs_bytes_total", "go_cpu_classes_gc_total_cpu_seconds_total",
				"go_cpu_classes_total_cpu_seconds_total", "go_gc_cycles_total_gc_cycles_total",
				"process_cpu_seconds_total", "redis_pool_hit_total", "redis_pool_miss_total",
				"redis_pool_timeout_total", "redis_pool_conn_total_current", "redis_pool_conn_idle_current",
				"redis_pool_conn_stale_total",
			} {
				if _, ok := families[name]; !ok {
					t.Errorf("family %s is missing", name)
				}
			}
			_, hasPools := families["syncpool_gets_total"]
			if hasPools != (mode == config.ModePooled) {
				t.Errorf("syncpool_gets_total present = %v in %s mode", hasPools, mode)
			}
		})
	}
}

// TestWorstCaseSeriesPerPodIsAtMost300 sends every method to every target
// through the real handler and counts the pod's series, then adds the
// request metrics' worst case: every method x route x status code that
// net/http lets a handler write, recorded by the same recorder type.
func TestWorstCaseSeriesPerPodIsAtMost300(t *testing.T) {
	for _, mode := range []string{config.ModePooled, config.ModeUnpooled} {
		t.Run(mode, func(t *testing.T) {
			s := newService(t, func(c *config.Config) { c.PoolMode = mode })
			h := s.Handler()
			exerciseAllRoutes(t, h)
			for _, m := range servertest.Methods[:10] {
				for _, target := range []string{"/api/v1/items/x", "/api/v1/items", "/api/v1/report", "/healthz", "/readyz", "/metrics", "/nothing"} {
					do(t, h, m, target, "")
				}
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			families, err := parser.TextToMetricFamilies(bytes.NewReader(scrape(t, h)))
			if err != nil {
				t.Fatal(err)
			}
			other, driven := 0, 0
			for name, mf := range families {
				if strings.HasPrefix(name, "http_") {
					driven += servertest.Series(mf)
					continue
				}
				other += servertest.Series(mf)
			}

			_, worst, err := servertest.WorstCase()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d other series, request series %d driven, %d worst case: %d per pod at most", mode, other, driven, worst, other+worst)
			if driven > worst {
				t.Errorf("driving the server gave %d request series, more than the %d of the worst case", driven, worst)
			}
			if other+worst > 300 {
				t.Errorf("%d series per pod in the worst case, want <= 300", other+worst)
			}
		})
	}
}

// TestMetricsCoverServiceSeriesList scrapes the real /metrics after
// exercising every route and checks every family that the rules and
// dashboards rely on (dashboards/testdata/service-series.txt) is there.
func TestMetricsCoverServiceSeriesList(t *testing.T) {
	const list = "../../dashboards/testdata/service-series.txt"
	f, err := os.Open(list)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s does not exist yet: nothing to check", list)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	s := newService(t, nil) // pooled, so the syncpool families exist
	exerciseAllRoutes(t, s.Handler())
	body := string(scrape(t, s.Handler()))
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("%s: malformed line %q", list, line)
		}
		n++
		if want := fmt.Sprintf("# TYPE %s %s\n", fields[0], fields[1]); !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", strings.TrimSpace(want))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("%s lists no series", list)
	}
}

// TestGracefulShutdownCompletesInFlightRequests cancels the service while
// slow requests are in flight and checks that every one completes, that
// /readyz is false during the shutdown delay, and that Serve returns cleanly.
func TestGracefulShutdownCompletesInFlightRequests(t *testing.T) {
	s := newService(t, func(c *config.Config) {
		c.FaultLatency = 400 * time.Millisecond
		c.ShutdownDelay = 300 * time.Millisecond
		c.ShutdownTimeout = 5 * time.Second
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	client := &http.Client{Timeout: 10 * time.Second}
	waitReady(t, client, base)

	const inFlight = 16
	var wg sync.WaitGroup
	codes := make(chan int, inFlight)
	errs := make(chan error, inFlight)
	for i := range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/api/v1/items/inflight-%d", base, i),
				strings.NewReader(`{"name":"in flight"}`))
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	time.Sleep(100 * time.Millisecond) // the requests are now sleeping in the fault middleware
	cancel()
	time.Sleep(100 * time.Millisecond) // inside the shutdown delay
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("/readyz during the shutdown delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz during shutdown = %d, want 503", resp.StatusCode)
	}

	wg.Wait()
	close(codes)
	close(errs)
	for err := range errs {
		t.Errorf("in-flight request failed: %v", err)
	}
	n := 0
	for code := range codes {
		n++
		if code != 200 {
			t.Errorf("in-flight request got %d", code)
		}
	}
	if n != inFlight {
		t.Errorf("%d of %d in-flight requests completed", n, inFlight)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
}

func waitReady(t *testing.T, c *http.Client, base string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := c.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("service not ready within 5s")
}

func TestEmbeddedRedisServesWithoutRedisAddr(t *testing.T) {
	cfg := config.Default()
	s, err := service.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	if code := do(t, h, "PUT", "/api/v1/items/e", `{"name":"embedded"}`); code != 200 {
		t.Fatalf("PUT = %d", code)
	}
	if code := do(t, h, "GET", "/api/v1/items/e", ""); code != 200 {
		t.Fatalf("GET = %d", code)
	}
	if code := do(t, h, "GET", "/api/v1/report", ""); code != 200 {
		t.Fatalf("report = %d", code)
	}
	if code := do(t, h, "GET", "/readyz", ""); code != 200 {
		t.Fatalf("/readyz = %d", code)
	}
}

// TestZeroRedisTimeoutsStart: REDIS_DIAL_TIMEOUT=0 and REDIS_READ_TIMEOUT=0 are valid (go-redis's
// defaults), so the service starts with them and its Redis health watcher takes its own bound.
func TestZeroRedisTimeoutsStart(t *testing.T) {
	cfg := config.Default()
	cfg.RedisDialTimeout, cfg.RedisReadTimeout = 0, 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("zero timeouts do not validate: %v", err)
	}
	s, err := service.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("starting with zero Redis timeouts: %v", err)
	}
	defer s.Close()
	if code := do(t, s.Handler(), "PUT", "/api/v1/items/z", `{"name":"zero"}`); code != 200 {
		t.Fatalf("PUT = %d", code)
	}
}

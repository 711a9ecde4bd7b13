package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/poolparity/poolparity/instrument/promexport"
)

const wrkOutput = `Running 20s test @ http://127.0.0.1:40000
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.10ms    2.01ms  40.12ms   88.00%
    Req/Sec     2.61k   180.11     3.02k    70.00%
  Latency Distribution
     50%    2.71ms
     75%    3.60ms
     90%    5.01ms
     99%   11.35ms
  104213 requests in 20.00s, 90.12MB read
  Non-2xx or 3xx responses: 9120
Requests/sec:   5210.44
Transfer/sec:      4.51MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkOutput)
	if err != nil {
		t.Fatal(err)
	}
	if r.RPS != 5210.44 || r.Requests != 104213 || r.P99 != 11350*time.Microsecond {
		t.Errorf("parsed %+v", r)
	}
	for _, bad := range []string{"", "Requests/sec: 1\n", strings.Replace(wrkOutput, "99%", "98%", 1)} {
		if _, err := parseWrk(bad); err == nil {
			t.Errorf("parseWrk(%q) succeeded", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Duration: 20 * time.Second, Warmup: time.Second, Connections: 16, Threads: 2, Modes: allModes}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"one mode has no base to compare with", func(c *Config) { c.Modes = "pooled" }, "BENCH_MODES"},
		{"a run of hours is refused", func(c *Config) { c.Duration = time.Hour }, "BENCH_DURATION"},
		{"more threads than connections", func(c *Config) { c.Threads = 32 }, "BENCH_THREADS"},
		{"a GC setting that is not one", func(c *Config) { c.GC = "default,lots" }, "BENCH_GC"},
		{"a limit row before the default", func(c *Config) { c.GC = "off:2,default" }, "first setting must be default"},
		{"a limit below the live heap", func(c *Config) { c.GC = "default,off:0.5" }, "from 1 to 100"},
		{"a negative open-loop rate", func(c *Config) { c.OpenRPS = -1 }, "BENCH_OPEN_RPS"},
		{"an open-loop run of an hour", func(c *Config) { c.OpenRPS, c.OpenDuration = 100, time.Hour }, "BENCH_OPEN_DURATION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestWriteBetweenMarkers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "doc.md")
	doc := "intro\n" + beginMarker + "\nold table\n" + endMarker + "\nafter\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBetween(p, beginMarker, endMarker, "| new |\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if want := "intro\n" + beginMarker + "\n| new |\n" + endMarker + "\nafter\n"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	if err := os.WriteFile(p, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBetween(p, beginMarker, endMarker, "x"); err == nil {
		t.Error("a file without markers was accepted")
	}
}

func TestParseGCSettings(t *testing.T) {
	got, err := parseGCSettings(defaultGC)
	if err != nil {
		t.Fatal(err)
	}
	want := []gcSetting{
		{Name: "default (GOGC=100)"},
		{Name: "GOGC=400", GOGC: "400"},
		{Name: "GOGC=1000", GOGC: "1000"},
		{Name: "GOGC=off, GOMEMLIMIT=1.1x live heap", GOGC: "off", LimitX: 1.1},
		{Name: "GOGC=off, GOMEMLIMIT=2x live heap", GOGC: "off", LimitX: 2},
		{Name: "GOGC=off, GOMEMLIMIT=8x live heap", GOGC: "off", LimitX: 8},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("setting %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	n, err := peakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if n < 1<<20 || n > 64<<30 {
		t.Errorf("peak RSS %d bytes: not a plausible figure for a Go test process", n)
	}
	if _, err := peakRSS(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// TestScrapeRuntime reads the series the GC table needs from a real
// exposition: the runtime collectors the service registers.
func TestScrapeRuntime(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := promexport.RegisterRuntime(reg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	runtime.GC()
	s, err := scrapeRuntime(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s.cycles < 1 || s.live <= 0 || s.totalCPU <= 0 || s.gcCPU <= 0 || s.gcCPU > s.totalCPU {
		t.Errorf("implausible runtime sample %+v", s)
	}
	bare := httptest.NewServer(promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{}))
	t.Cleanup(bare.Close)
	if _, err := scrapeRuntime(context.Background(), bare.URL); err == nil || !strings.Contains(err.Error(), "go_gc_heap_live_bytes") {
		t.Errorf("an exposition without the runtime series: %v, want an error naming them", err)
	}
}

// TestOpenLoopRun: the GC table's open-loop run offers its fixed rate to a service that
// answers in 20 ms and reports the client-side p99 from each arrival's due time.
func TestOpenLoopRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	cfg := Config{OpenRPS: 100, OpenDuration: time.Second}
	st, err := openLoop(context.Background(), cfg, strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Arrivals < 90 || st.Dropped != 0 || st.Requests < 80 {
		t.Errorf("%d arrivals, %d dropped, %d answered; want about 100 at 100 req/s for 1s, none dropped", st.Arrivals, st.Dropped, st.Requests)
	}
	if p99 := st.Latency.P99; p99 < 20*time.Millisecond {
		t.Errorf("client p99 %v, want at least the service's 20ms", p99)
	}
	if c := openCell(st); !strings.HasSuffix(c, "ms") {
		t.Errorf("cell %q, want a p99 alone when nothing was dropped", c)
	}
	none, err := openLoop(context.Background(), Config{}, "127.0.0.1:1")
	if err != nil || openCell(none) != "-" {
		t.Errorf("a zero rate: %v, cell %q; want no run and -", err, openCell(none))
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/dashboards"
	"github.com/poolparity/poolparity/instrument"
)

// newTestServer serves the service in mode with its telemetry, as run does.
func newTestServer(t *testing.T, mode string) (*httptest.Server, *instrument.Registry) {
	t.Helper()
	return newTestServerPoisoned(t, mode, false)
}

// newTestServerPoisoned is newTestServer with the pools' poisoning on or
// off (POOLPARITY_POISON).
func newTestServerPoisoned(t *testing.T, mode string, poison bool) (*httptest.Server, *instrument.Registry) {
	t.Helper()
	track, err := instrument.ParseTrack("true", mode)
	if err != nil {
		t.Fatal(err)
	}
	pools := instrument.NewRegistry()
	svc, err := newService(mode, poison, pools)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := newTelemetry(track, pools)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.shutdown(context.Background()) })
	mux := http.NewServeMux()
	mux.Handle("/thumbnail/", svc.routes())
	mux.Handle("GET /metrics", tel.handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, pools
}

func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func TestThumbnailIsTheSameImageInEveryMode(t *testing.T) {
	var want map[string][]byte
	for _, mode := range Modes {
		if mode == ModeNeverReset {
			continue // its misuse is the bytes: TestNeverResetResponsesGrow
		}
		t.Run(mode, func(t *testing.T) {
			srv, _ := newTestServer(t, mode)
			got := map[string][]byte{}
			for _, q := range []string{"/thumbnail/a?w=16", "/thumbnail/img-00042", "/thumbnail/Z_9?w=512", "/thumbnail/a?w=16"} {
				code, h, body := get(t, srv.URL+q)
				if code != http.StatusOK || h.Get("Content-Type") != "image/png" {
					t.Fatalf("GET %s: %d %s, want 200 image/png", q, code, h.Get("Content-Type"))
				}
				img, err := png.Decode(bytes.NewReader(body))
				if err != nil {
					t.Fatalf("GET %s: not a PNG: %v", q, err)
				}
				side := DefaultWidth
				if i := strings.Index(q, "w="); i >= 0 {
					side, _ = strconv.Atoi(q[i+2:])
				}
				if b := img.Bounds(); b.Dx() != side || b.Dy() != side {
					t.Errorf("GET %s: %v, want %dx%d", q, b, side, side)
				}
				if prev, ok := got[q]; ok && !bytes.Equal(prev, body) {
					t.Errorf("GET %s twice: different images (a pooled image kept state)", q)
				}
				got[q] = body
			}
			// Pooled or not, the bytes are the unpooled ones: no state leaks
			// from one image into the next.
			if want == nil {
				want = got
				return
			}
			for q, b := range want {
				if !bytes.Equal(got[q], b) {
					t.Errorf("GET %s: %s answers other bytes than %s", q, mode, Modes[0])
				}
			}
		})
	}
}

// TestNeverResetResponsesGrow shows never-reset's misuse: a pooled output
// buffer put back without a reset carries the PNGs before it, so responses
// grow past the one image and a decoder reads an earlier image.
func TestNeverResetResponsesGrow(t *testing.T) {
	srv, _ := newTestServer(t, ModeNeverReset)
	_, _, one := get(t, srv.URL+"/thumbnail/a?w=16")
	grown := 0
	for range 20 {
		code, _, body := get(t, srv.URL+"/thumbnail/a?w=16")
		if code != http.StatusOK || !bytes.HasPrefix(body, []byte("\x89PNG")) {
			t.Fatalf("%d %q..., want 200 and a PNG first", code, body[:min(len(body), 8)])
		}
		if len(body) > len(one) {
			grown++
		}
	}
	if grown == 0 {
		t.Errorf("21 responses of %d bytes each: want later ones to carry the earlier ones", len(one))
	}
}

func TestBadInputIsA400WithAJSONError(t *testing.T) {
	srv, _ := newTestServer(t, ModePooled)
	tests := []struct{ path, want string }{
		{"/thumbnail/a%20b", "id"},
		{"/thumbnail/" + strings.Repeat("x", 65), "id"},
		{"/thumbnail/ok?w=15", "w"},
		{"/thumbnail/ok?w=513", "w"},
		{"/thumbnail/ok?w=abc", "w"},
		{"/thumbnail/ok?w=", ""}, // empty: the default width
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, h, body := get(t, srv.URL+tt.path)
			if tt.want == "" {
				if code != http.StatusOK {
					t.Fatalf("%d, want 200", code)
				}
				return
			}
			var e struct{ Error string }
			if code != http.StatusBadRequest || h.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil || !strings.HasPrefix(e.Error, tt.want+" ") {
				t.Errorf("%d %s %q, want 400 with a JSON error about %s", code, h.Get("Content-Type"), body, tt.want)
			}
		})
	}
}

func TestPoolStats(t *testing.T) {
	tests := []struct {
		mode string
		// check gets the image pool's stats after n requests.
		check func(t *testing.T, n uint64, st instrument.Stats)
	}{
		{ModePooled, func(t *testing.T, n uint64, st instrument.Stats) {
			if st.Gets != n || st.Puts != n || st.Drops != 0 || st.Misses > n/4 {
				t.Errorf("image pool %+v after %d sequential requests: want every image kept and most reused", st, n)
			}
		}},
		{ModeNeverPut, func(t *testing.T, n uint64, st instrument.Stats) {
			if st.Gets != n || st.Misses != n || st.Puts != 0 {
				t.Errorf("image pool %+v after %d requests: want no image put back and every Get a miss", st, n)
			}
		}},
		{ModeMisuseCap, func(t *testing.T, n uint64, st instrument.Stats) {
			if st.Gets != n || st.Misses != n || st.Drops != n || st.Puts != 0 {
				t.Errorf("image pool %+v after %d requests: want every image dropped and every Get a miss", st, n)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			srv, pools := newTestServer(t, tt.mode)
			const n = 40
			for i := range n {
				if code, _, _ := get(t, srv.URL+"/thumbnail/p"+strconv.Itoa(i)+"?w=64"); code != http.StatusOK {
					t.Fatalf("status %d", code)
				}
			}
			for _, ps := range pools.Snapshot() {
				if ps.Name == "image_rgba" {
					tt.check(t, n, ps.Stats)
					return
				}
			}
			t.Fatalf("no image_rgba pool in %+v", pools.Snapshot())
		})
	}
}

// TestExposesWhatTheSemconvRulesRead scrapes the service and checks that it
// exposes, with its track's labels, every series the semconv rules read from
// an OpenTelemetry-instrumented service (dashboards/testdata/otel-service-series.txt)
// and the ones they read from every service (process CPU, the pools).
func TestExposesWhatTheSemconvRulesRead(t *testing.T) {
	// Through run's wiring: the route as otelhttp records it needs the
	// otelhttp handler.
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, Config{Addr: "127.0.0.1:0", GrayStatus: "true", PoolMode: ModePooled, ShutdownTimeout: 5 * time.Second}, slog.New(slog.DiscardHandler), ready)
	}()
	addr := <-ready
	if code, _, _ := get(t, "http://"+addr+"/thumbnail/x?w=32"); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	_, _, body := get(t, "http://"+addr+"/metrics")
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	want, err := dashboards.OTelServiceSeries()
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, dashboards.Series{Name: "process_cpu_seconds_total", Type: "counter"},
		dashboards.Series{Name: "syncpool_gets_total", Type: "counter"}, dashboards.Series{Name: "syncpool_misses_total", Type: "counter"})
	for _, s := range want {
		fam, ok := fams[s.Name]
		if !ok {
			t.Errorf("%s is not exposed", s.Name)
			continue
		}
		if got := strings.ToLower(fam.GetType().String()); got != s.Type {
			t.Errorf("%s is a %s, want a %s", s.Name, got, s.Type)
		}
		for _, m := range fam.GetMetric() {
			if l := label(m, "gray_status"); l != "true" {
				t.Errorf("%s has gray_status %q, want the track's \"true\"", s.Name, l)
			}
		}
	}
	if fam := fams["http_server_request_duration_seconds"]; fam != nil {
		for _, m := range fam.GetMetric() {
			if r := label(m, "http_route"); r != "/thumbnail/{id}" {
				t.Errorf("http_route %q, want the mux pattern /thumbnail/{id} (a bounded label)", r)
			}
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{"defaults", nil, nil, Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModePooled, ShutdownTimeout: 10 * time.Second}, ""},
		{"environment", nil, map[string]string{"HTTP_ADDR": "127.0.0.1:9", "GRAY_STATUS": "true", "POOL_MODE": "misuse-cap", "SHUTDOWN_TIMEOUT": "3s"},
			Config{Addr: "127.0.0.1:9", GrayStatus: "true", PoolMode: ModeMisuseCap, ShutdownTimeout: 3 * time.Second}, ""},
		{"a flag wins", []string{"-pool-mode", "unpooled"}, map[string]string{"POOL_MODE": "pooled"},
			Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModeUnpooled, ShutdownTimeout: 10 * time.Second}, ""},
		{"unknown mode", nil, map[string]string{"POOL_MODE": "misuse-dirty"}, Config{}, `POOL_MODE "misuse-dirty": want one of unpooled, pooled, misuse-cap`},
		{"bad gray status", nil, map[string]string{"GRAY_STATUS": "maybe"}, Config{}, "GRAY_STATUS"},
		{"bad address", nil, map[string]string{"HTTP_ADDR": "8080"}, Config{}, "HTTP_ADDR"},
		{"bad timeout", nil, map[string]string{"SHUTDOWN_TIMEOUT": "soon"}, Config{}, "SHUTDOWN_TIMEOUT"},
		{"a stray argument", []string{"extra"}, nil, Config{}, "unexpected argument"},
		{"profiles on a port of their own", []string{"-pprof-addr", "127.0.0.1:6060"}, nil,
			Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModePooled, ShutdownTimeout: 10 * time.Second, PprofAddr: "127.0.0.1:6060"}, ""},
		{"profiles on the API's port", nil, map[string]string{"PPROF_ADDR": ":8080"}, Config{}, "PPROF_ADDR"},
		{"a profile address without a port", nil, map[string]string{"PPROF_ADDR": "localhost"}, Config{}, "PPROF_ADDR"},
		{"poisoning on by environment", nil, map[string]string{"POOLPARITY_POISON": "1"},
			Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModePooled, ShutdownTimeout: 10 * time.Second, Poison: true}, ""},
		{"poisoning spelt true", nil, map[string]string{"POOLPARITY_POISON": "true"},
			Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModePooled, ShutdownTimeout: 10 * time.Second, Poison: true}, ""},
		{"poisoning off by environment", nil, map[string]string{"POOLPARITY_POISON": "0"},
			Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModePooled, ShutdownTimeout: 10 * time.Second}, ""},
		{"the poison flag wins", []string{"-poison=false"}, map[string]string{"POOLPARITY_POISON": "true"},
			Config{Addr: ":8080", GrayStatus: "false", PoolMode: ModePooled, ShutdownTimeout: 10 * time.Second}, ""},
		{"a poison value that is no boolean", nil, map[string]string{"POOLPARITY_POISON": "yes"}, Config{}, `POOLPARITY_POISON: "yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestImportsOnlyPublicPackages keeps the example honest: it is what a team
// writes, so it imports the instrument module and nothing else of this
// repository.
func TestImportsOnlyPublicPackages(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, "github.com/poolparity/poolparity/") && !strings.HasPrefix(p, "github.com/poolparity/poolparity/instrument") {
				t.Errorf("%s imports %s: the example may use only the instrument module", f, p)
			}
		}
	}
}

func BenchmarkThumbnail(b *testing.B) {
	for _, mode := range Modes {
		b.Run(mode, func(b *testing.B) {
			svc, err := newService(mode, false, instrument.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			h := svc.routes()
			req := httptest.NewRequest(http.MethodGet, "/thumbnail/bench?w=128", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

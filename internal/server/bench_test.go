package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/internal/item"
	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/redistest"
	"github.com/poolparity/poolparity/internal/server"
)

// discardWriter is a ResponseWriter that keeps nothing, like a network
// connection's buffered writer, so that benchmarks measure the handler and
// not a recorder's growing buffer.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	w.code = code
}
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func (w *discardWriter) reset() { clear(w.h); w.code = 0; w.n = 0 }

// benchCorpus seeds n items whose payloads read like prose: words drawn
// from a large vocabulary with a skewed (Zipf-like) frequency.
func benchCorpus(b *testing.B, e *env, n, payloadWords int) {
	b.Helper()
	vocab := make([]string, 4000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("%s%d", []string{"pool", "gc", "alloc", "redis", "latency", "buffer", "canary", "track"}[i%8], i)
	}
	seed := uint64(42)
	next := func() uint64 { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed }
	for i := range n {
		var p strings.Builder
		for range payloadWords {
			r := next() % uint64(len(vocab))
			p.WriteString(vocab[(r*r)/uint64(len(vocab))]) // skew towards small indices
			p.WriteByte(' ')
		}
		it := item.Item{Name: fmt.Sprintf("item %d", i), Tags: []string{vocab[i%7], vocab[i%11]}, Payload: p.String()}
		body, _ := json.Marshal(it)
		req := httptest.NewRequest("PUT", fmt.Sprintf("/api/v1/items/b%04d", i), strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("seeding: %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkReport compares the report endpoint in the two pool modes, on
// the same items in a real Redis. Compare with benchstat:
//
//	go test -run '^$' -bench 'BenchmarkReport' -count 10 ./internal/server | tee report.txt
//	benchstat -col /mode report.txt
func BenchmarkReport(b *testing.B) {
	st, _ := testStore(b, redistest.Addr(b))
	seeder := newServer(b, st, pools.ModeUnpooled)
	const items, words = 100, 300
	benchCorpus(b, seeder, items, words)
	for _, mode := range []struct {
		name string
		mode pools.Mode
	}{{"pooled", pools.ModePooled}, {"unpooled", pools.ModeUnpooled}} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			e := newServer(b, st, mode.mode)
			req := httptest.NewRequest("GET", fmt.Sprintf("/api/v1/report?n=%d", items), nil)
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				w.reset()
				e.h.ServeHTTP(w, req)
				if w.code != 200 {
					b.Fatalf("report: %d", w.code)
				}
			}
		})
	}
}

// BenchmarkItemGet compares a single-item read in the two pool modes.
func BenchmarkItemGet(b *testing.B) {
	st, _ := testStore(b, redistest.Addr(b))
	seeder := newServer(b, st, pools.ModeUnpooled)
	benchCorpus(b, seeder, 1, 300)
	for _, mode := range []struct {
		name string
		mode pools.Mode
	}{{"pooled", pools.ModePooled}, {"unpooled", pools.ModeUnpooled}} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			e := newServer(b, st, mode.mode)
			req := httptest.NewRequest("GET", "/api/v1/items/b0000", nil)
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				w.reset()
				e.h.ServeHTTP(w, req)
				if w.code != 200 {
					b.Fatalf("get: %d", w.code)
				}
			}
		})
	}
}

// BenchmarkMetricsCost measures the request metrics' cost: the same
// handler with the Prometheus recorder and with the no-op recorder, on the
// cheapest API request (a single-item read), where the relative cost is
// highest. Run in parallel to include any contention on the metric vecs.
func BenchmarkMetricsCost(b *testing.B) {
	st, _ := testStore(b, redistest.Addr(b))
	seeder := newServer(b, st, pools.ModeUnpooled)
	benchCorpus(b, seeder, 1, 50)
	for _, m := range []struct {
		name string
		on   bool
	}{{"on", true}, {"off", false}} {
		b.Run("metrics="+m.name, func(b *testing.B) {
			var e *env
			if m.on {
				e = newServer(b, st, pools.ModePooled)
			} else {
				e = newServer(b, st, pools.ModePooled, func(o *server.Options) { o.Metrics = server.NopRecorder{} })
			}
			b.ReportAllocs()
			defer reportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest("GET", "/api/v1/items/b0000", nil)
				w := &discardWriter{h: make(http.Header)}
				for pb.Next() {
					w.reset()
					e.h.ServeHTTP(w, req)
					if w.code != 200 {
						b.Errorf("get: %d", w.code)
						return
					}
				}
			})
		})
	}
}

// BenchmarkObserveRequest is the per-request cost of the Prometheus
// recorder on its own, to set against the ns/op of a request.
func BenchmarkObserveRequest(b *testing.B) {
	rec, err := server.NewPromRecorder(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec.ObserveRequest("GET", server.RouteItem, 200, 3*time.Millisecond, 512)
		}
	})
}

// reportCPU adds cpu-ns/op: the process CPU time per operation. On a busy
// machine, and with Redis round trips in every request, it is steadier than
// wall-clock ns/op, and it leaves out the Redis server's own work.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if d := processCPU() - start; d > 0 && b.N > 0 {
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

package service_test

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/redistest"
)

// heapCeiling is the documented bound (docs/service.md, "Cost budget") on
// the heap of a pod with the default budget while eight reports over 200
// items of 1 MiB arrive at once.
const heapCeiling = 64 << 20

// peakHeap samples the bytes of live and not yet swept heap objects until
// stop is closed, and returns the largest sample.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// TestEightConcurrentReportsStayUnderTheHeapCeiling is the abuse run of
// issue 17: 200 items of 1 MiB, then eight concurrent reports over all of
// them, with the default budget. The items repeat a few words, so no report
// passes a byte bound (that would be a 422: server's
// TestEightConcurrentReportsPastTheHeldBoundAreAllRefused). Every request
// gets an answer (200, or 429 when no heavy slot freed in time)
// and the heap stays under heapCeiling.
func TestEightConcurrentReportsStayUnderTheHeapCeiling(t *testing.T) {
	rs := redistest.Start(t) // 200 MiB of its own, dropped when the test ends
	seeded := false
	for _, mode := range []string{config.ModePooled, config.ModeUnpooled} {
		t.Run(mode, func(t *testing.T) {
			s := newService(t, func(c *config.Config) {
				c.RedisAddr = rs.Addr()
				c.PoolMode = mode
				c.RedisReadTimeout = 5 * time.Second // a loaded 2-core machine
			})
			h := s.Handler()
			// Seed through the API once: both modes read the same Redis.
			// Decoding 200 MiB of bodies twice is slow under the race
			// detector, and the reports' cost is what is measured.
			if !seeded {
				seeded = true
				payload := strings.Repeat("pool buffer gray stable canary alloc latency ", (1<<20-200)/45)
				for i := range 200 {
					body := fmt.Sprintf(`{"name":"item %d","tags":["a","b%d"],"payload":%q}`, i, i%7, payload)
					if code := do(t, h, "PUT", fmt.Sprintf("/api/v1/items/big%03d", i), body); code != 200 {
						t.Fatalf("PUT %d = %d", i, code)
					}
				}
			}
			runtime.GC()
			stop := make(chan struct{})
			peak := peakHeap(stop)
			var wg sync.WaitGroup
			var ok, shed, other atomic.Int32
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/report?n=1000", nil))
					switch {
					case rec.Code == 200 && strings.HasPrefix(rec.Body.String(), `{"items":200,`):
						ok.Add(1)
					case rec.Code == 429 && rec.Header().Get("Retry-After") != "":
						shed.Add(1)
					default:
						other.Add(1)
						t.Errorf("report = %d %.200s", rec.Code, rec.Body)
					}
				}()
			}
			wg.Wait()
			close(stop)
			p := <-peak
			t.Logf("%s: %d answered 200, %d shed with 429, %d other; peak heap %d MiB (ceiling %d MiB)", mode, ok.Load(), shed.Load(), other.Load(), p>>20, heapCeiling>>20)
			if ok.Load() == 0 {
				t.Error("no report was served: the budget sheds everything")
			}
			if n := ok.Load() + shed.Load(); n != 8 {
				t.Errorf("%d of 8 reports answered 200 or 429", n)
			}
			if p > heapCeiling {
				t.Errorf("peak heap %d MiB, want <= %d MiB", p>>20, heapCeiling>>20)
			}
		})
	}
}

package loadgen_test

import (
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/loadgen"
)

// within reports whether got is within rel (a fraction) of want.
func within(got, want time.Duration, rel float64) bool {
	diff := float64(got - want)
	return diff <= rel*float64(want) && -diff <= rel*float64(want)
}

func TestHistogramQuantiles(t *testing.T) {
	var h loadgen.Histogram
	for ms := 1; ms <= 1000; ms++ {
		h.Record(time.Duration(ms) * time.Millisecond)
	}
	s := h.Summary()
	tests := []struct {
		name      string
		got, want time.Duration
		rel       float64
	}{
		{"p50", s.P50, 500 * time.Millisecond, 0.01},
		{"p90", s.P90, 900 * time.Millisecond, 0.01},
		{"p95", s.P95, 950 * time.Millisecond, 0.01},
		{"p99", s.P99, 990 * time.Millisecond, 0.01},
		{"p99.9", s.P999, 999 * time.Millisecond, 0.01},
		{"Quantile(0.5)", h.Quantile(0.5), 500 * time.Millisecond, 0.01},
		{"Quantile(0) is the smallest", h.Quantile(0), time.Millisecond, 0.01},
		{"Quantile(1) is the max", h.Quantile(1), time.Second, 0},
		{"a quantile above 1 is the max", h.Quantile(2), time.Second, 0},
		{"max is exact", s.Max, time.Second, 0},
		{"mean is exact", s.Mean, 500500 * time.Microsecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !within(tt.got, tt.want, tt.rel) {
				t.Errorf("%s = %v, want %v within %g%%", tt.name, tt.got, tt.want, 100*tt.rel)
			}
			if tt.got < tt.want*99/100 {
				t.Errorf("%s = %v, below %v: a quantile is an upper bound", tt.name, tt.got, tt.want)
			}
		})
	}
	if s.Count != 1000 {
		t.Errorf("count %d, want 1000", s.Count)
	}
}

func TestHistogramEdges(t *testing.T) {
	tests := []struct {
		name   string
		record []time.Duration
		want   loadgen.LatencySummary
	}{
		{"an empty histogram is all zeros", nil, loadgen.LatencySummary{}},
		{"a value above the top is the top", []time.Duration{2 * time.Minute},
			loadgen.LatencySummary{Count: 1, Mean: loadgen.MaxLatency, P50: loadgen.MaxLatency, P90: loadgen.MaxLatency,
				P95: loadgen.MaxLatency, P99: loadgen.MaxLatency, P999: loadgen.MaxLatency, Max: loadgen.MaxLatency}},
		{"a negative value is zero", []time.Duration{-time.Second}, loadgen.LatencySummary{Count: 1}},
		{"small values are exact", []time.Duration{100, 200, 200, 255},
			loadgen.LatencySummary{Count: 4, Mean: 188, P50: 200, P90: 255, P95: 255, P99: 255, P999: 255, Max: 255}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h loadgen.Histogram
			for _, d := range tt.record {
				h.Record(d)
			}
			if got := h.Summary(); got != tt.want {
				t.Errorf("Summary() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestHistogramRelativeError: over the whole range, the quantile of a value
// is that value or at most 1/128 above it.
func TestHistogramRelativeError(t *testing.T) {
	for v := time.Duration(1); v < loadgen.MaxLatency; v = v*21/20 + 1 {
		var h loadgen.Histogram
		h.Record(v)
		h.Record(loadgen.MaxLatency) // so that the max does not cap the quantile
		if got := h.Quantile(0); got < v || float64(got-v) > float64(v)/128 {
			t.Fatalf("Quantile(0) of %v and the top = %v, want %v to %v", v, got, v, v+v/128)
		}
	}
}

func TestHistogramConcurrentRecords(t *testing.T) {
	var h loadgen.Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000+i) * time.Microsecond)
			}
		})
	}
	for range 10 {
		_ = h.Summary() // while the records go on
	}
	wg.Wait()
	if s := h.Summary(); s.Count != 8000 || s.Max != 7999*time.Microsecond {
		t.Errorf("count %d, max %v; want 8000, 7.999ms", s.Count, s.Max)
	}
}

// BenchmarkHistogramRecord records from every P at once, as the requests of
// a run do.
func BenchmarkHistogramRecord(b *testing.B) {
	var h loadgen.Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := 137 * time.Microsecond
		for pb.Next() {
			h.Record(d)
			d = d*33/32 + 1
			if d > time.Second {
				d = 137 * time.Microsecond
			}
		}
	})
}

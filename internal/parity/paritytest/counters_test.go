package paritytest_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/paritytest"
)

func TestCounters(t *testing.T) {
	end := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	base := paritytest.Track{Status: "true", Pods: 2, PerPodStep: 200, ErrRate: 0.01, Latency: 0.05, CPU: 0.001, Heap: 1000, Resp: 500}
	for _, tc := range []struct {
		name  string
		track func(paritytest.Track) paritytest.Track
		check func(t *testing.T, final map[string]float64)
	}{
		{"the +Inf bucket, the requests and the size histogram's count agree", func(tr paritytest.Track) paritytest.Track { return tr }, func(t *testing.T, f map[string]float64) {
			if f["inf"] != f[paritytest.RequestsRule] || f[paritytest.SizeCountRule] != f[paritytest.RequestsRule] || f[paritytest.RequestsRule] < 1000 {
				t.Errorf("+Inf %v, requests %v, size count %v", f["inf"], f[paritytest.RequestsRule], f[paritytest.SizeCountRule])
			}
		}},
		{"a reset restarts pod 0's counters", func(tr paritytest.Track) paritytest.Track { tr.ResetAt = 9; return tr }, func(t *testing.T, f map[string]float64) {
			if f[paritytest.RequestsRule] > 3*200 {
				t.Errorf("pod 0 counted %v requests after a reset two steps before the end", f[paritytest.RequestsRule])
			}
		}},
		{"a NaN is where it is asked", func(tr paritytest.Track) paritytest.Track { tr.NaNAt = 10; return tr }, func(t *testing.T, f map[string]float64) {
			if !math.IsNaN(f[paritytest.RequestsRule]) {
				t.Errorf("requests %v, want NaN", f[paritytest.RequestsRule])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := paritytest.Counters(rand.New(rand.NewPCG(1, 2)), tc.track(base), end, 10, 20*time.Second)
			final := map[string]float64{}
			for name, series := range m {
				if len(series) == 0 {
					t.Fatalf("%s: no series", name)
				}
				for _, s := range series {
					if len(s.Values) != 11 || !s.Values[10].Timestamp.Time().Equal(end) {
						t.Fatalf("%s: %d samples ending %v, want 11 ending %v", s.Metric, len(s.Values), s.Values[len(s.Values)-1].Timestamp.Time(), end)
					}
					if s.Metric["pod"] != "true-0" {
						continue
					}
					v := float64(s.Values[10].Value)
					if name == paritytest.BucketsRule {
						if s.Metric["le"] == "+Inf" {
							final["inf"] = v
						}
						continue
					}
					final[name] = v
				}
			}
			if len(m) != 7 {
				t.Errorf("%d rules, want 7", len(m))
			}
			tc.check(t, final)
		})
	}
}

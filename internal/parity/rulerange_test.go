package parity

import (
	"testing"
	"time"
)

func TestRuleRange(t *testing.T) {
	tests := []struct {
		rule string
		want time.Duration
		ok   bool
	}{
		{"job_gray_status:http_request_duration_seconds:p99_rate5m", 5 * time.Minute, true},
		{"job_gray_status:go_gc_heap_live_bytes_per_pod:avg_over_time1m", time.Minute, true},
		{"job_gray_status_pool:syncpool_dirty:increase30s", 30 * time.Second, true},
		{"job:http_requests:min_track_rate1h", time.Hour, true},
		{"up", 0, false},
		{"job:foo:ratio", 0, false},
		{"job:foo:rate5", 0, false},   // a number without a unit
		{"job:foo:rate5ms", 0, false}, // two unit letters: not the convention
		{"job:foo:m", 0, false},       // a unit without a number
		{"job:foo:rate0m", 0, false},  // no range
		{"", 0, false},
		{":", 0, false},
		{"job:foo:rate99999999999999999999d", 0, false}, // out of range
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, ok := RuleRange(tt.rule)
			if got != tt.want || ok != tt.ok {
				t.Errorf("RuleRange(%q) = %v, %v; want %v, %v", tt.rule, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzRuleRange(f *testing.F) {
	for _, s := range []string{"a:b:rate5m", "x", "::1d", "rate1y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		if d, ok := RuleRange(rule); ok && d <= 0 {
			t.Errorf("RuleRange(%q) = %v, true: want a positive range", rule, d)
		}
	})
}

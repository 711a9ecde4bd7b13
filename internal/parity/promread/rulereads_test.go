package promread_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// rulesOnly answers the rules list with fixed groups.
type rulesOnly struct {
	fixed
	groups []v1.RuleGroup
}

func (r rulesOnly) Rules(context.Context, []string) (v1.RulesResult, error) {
	return v1.RulesResult{Groups: r.groups}, nil
}

func TestRuleReads(t *testing.T) {
	q := rulesOnly{groups: []v1.RuleGroup{{Name: "poolparity", Rules: v1.Rules{
		v1.RecordingRule{Name: "job:live:avg1m", Query: `avg by (job) (avg_over_time(go_gc_heap_live_bytes{job="a"}[1m]))`},
		v1.RecordingRule{Name: "job:live:ratio1m", Query: `job:live:avg1m{gray_status="true"} / ignoring (gray_status) job:live:avg1m{gray_status="false"}`},
		v1.RecordingRule{Name: "job:reqs:rate1m", Query: `sum(rate(http_requests_total[1m]))`},
		v1.AlertingRule{Name: "LiveHeap", Query: `job:live:ratio1m > 1.2 and on (job) job:reqs:rate1m > 1`},
		v1.AlertingRule{Name: "Latency", Query: `x_p95 > 1`},
		v1.AlertingRule{Name: "Latency", Query: `x_p99 > 1`},
	}}}}
	rr, err := promread.ReadRuleReads(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		roots []string
		want  []string
	}{
		{"an alert reads through the recording rules to the raw series", []string{"LiveHeap"}, []string{"go_gc_heap_live_bytes", "http_requests_total"}},
		{"a recording rule reads its raw series", []string{"job:reqs:rate1m"}, []string{"http_requests_total"}},
		{"an alert loaded twice reads both queries' series", []string{"Latency"}, []string{"x_p95", "x_p99"}},
		{"several roots give each raw series once", []string{"job:live:ratio1m", "LiveHeap"}, []string{"go_gc_heap_live_bytes", "http_requests_total"}},
		{"a name no rule records is raw", []string{"up"}, []string{"up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rr.Raw(tt.roots...); !slices.Equal(got, tt.want) {
				t.Errorf("Raw(%q) = %q, want %q", tt.roots, got, tt.want)
			}
		})
	}
	t.Run("a query this parser cannot read is an error naming the rule", func(t *testing.T) {
		bad := rulesOnly{groups: []v1.RuleGroup{{Rules: v1.Rules{v1.RecordingRule{Name: "broken", Query: "sum("}}}}}
		if _, err := promread.ReadRuleReads(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "broken") {
			t.Errorf("error %v, want one naming the rule", err)
		}
	})
}

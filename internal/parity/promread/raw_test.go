package promread_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// rawAnswer answers every instant query with val and warnings, and keeps the query asked.
type rawAnswer struct {
	val      model.Value
	warnings v1.Warnings
	asked    *string
}

func (r rawAnswer) Query(_ context.Context, q string, _ time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	*r.asked = q
	return r.val, r.warnings, nil, nil
}

func (r rawAnswer) QueryRange(context.Context, string, v1.Range, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return nil, nil, nil, nil
}

func (r rawAnswer) Rules(context.Context, []string) (v1.RulesResult, error) {
	return v1.RulesResult{}, nil
}

func stream(labels model.Metric, at time.Time, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: labels}
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.Add(time.Duration(i) * 20 * time.Second).UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func TestReadRaw(t *testing.T) {
	at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	from := at.Add(-2 * time.Minute)
	name := model.LabelName(model.MetricNameLabel)
	pod := func(gs, p, le string) model.Metric {
		m := model.Metric{name: "job_gray_status_pod_le:http_request_duration_seconds_bucket:total", "gray_status": model.LabelValue(gs), "pod": model.LabelValue(p), "job": "svc"}
		if le != "" {
			m["le"] = model.LabelValue(le)
		}
		return m
	}
	tests := []struct {
		name             string
		val              model.Value
		warnings         v1.Warnings
		baseline         string
		stable, gray     int // series per track
		points           int // points of the first gray series
		why              string
		refused, wantErr bool
	}{
		{name: "series per track, each sample at its own time", val: model.Matrix{
			stream(pod("false", "s-0", "0.05"), from, 1, 2, 3), stream(pod("false", "s-0", "+Inf"), from, 2, 4, 6),
			stream(pod("true", "g-0", "0.05"), from, 0, 1, 2, 3), stream(pod("baseline", "b-0", "0.05"), from, 1),
		}, stable: 2, gray: 1, points: 4},
		{name: "the baseline track replaces stable", val: model.Matrix{
			stream(pod("false", "s-0", ""), from, 1), stream(pod("baseline", "b-0", ""), from, 1), stream(pod("true", "g-0", ""), from, 1),
		}, baseline: "baseline", stable: 1, gray: 1, points: 1},
		{name: "samples outside the range are left out and counted", val: model.Matrix{
			stream(pod("false", "s-0", ""), from.Add(-time.Minute), 1, 2, 3, 4), stream(pod("true", "g-0", ""), from, 1),
		}, stable: 1, gray: 1, points: 1, why: "3 samples outside"},
		{name: "a track without series says so", val: model.Matrix{stream(pod("false", "s-0", ""), from, 1)}, stable: 1, why: "gray track has no series"},
		{name: "a partial answer is no evidence", val: model.Matrix{stream(pod("false", "s-0", ""), from, 1)}, warnings: v1.Warnings{"partial"}, refused: true, why: "partial"},
		{name: "a vector is not an answer", val: model.Vector{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked string
			got, err := promread.ReadRaw(context.Background(), rawAnswer{val: tt.val, warnings: tt.warnings, asked: &asked}, `m{job="svc"}`, from, at, tt.baseline)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if asked != `m{job="svc"}[2m]` {
				t.Errorf("asked %q, want the selector over the range", asked)
			}
			if len(got.Stable) != tt.stable || len(got.Gray) != tt.gray || got.Refused != tt.refused {
				t.Errorf("got %d stable and %d gray series (refused %v), want %d, %d, %v", len(got.Stable), len(got.Gray), got.Refused, tt.stable, tt.gray, tt.refused)
			}
			if tt.gray > 0 && len(got.Gray[0].Points) != tt.points {
				t.Errorf("gray's first series has %d points, want %d", len(got.Gray[0].Points), tt.points)
			}
			if why := strings.Join(got.Why, "; "); !strings.Contains(why, tt.why) || (tt.why == "" && why != "") {
				t.Errorf("why %q, want it to say %q", why, tt.why)
			}
		})
	}
}

func TestReadRawIdentity(t *testing.T) {
	at := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	m := model.Matrix{
		stream(model.Metric{model.MetricNameLabel: "x", "gray_status": "true", "pod": "g-1", "instance": "10.0.0.2:8080", "le": "+Inf"}, at.Add(-time.Minute), 1),
		stream(model.Metric{model.MetricNameLabel: "x", "gray_status": "true", "pod": "g-0", "instance": "10.0.0.1:8080", "le": "0.1"}, at.Add(-time.Minute), 1),
	}
	var asked string
	got, err := promread.ReadRaw(context.Background(), rawAnswer{val: m, asked: &asked}, "x", at.Add(-time.Minute), at, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Gray) != 2 || got.Gray[0].ID != `instance="10.0.0.1:8080",pod="g-0"` || got.Gray[0].Le != "0.1" || got.Gray[1].Le != "+Inf" {
		t.Errorf("gray series %+v: want sorted by identity, without the name, gray_status or le in it", got.Gray)
	}
	if _, err := promread.ReadRaw(context.Background(), rawAnswer{val: m, asked: &asked}, "x", at, at, ""); err == nil {
		t.Error("an empty range was read")
	}
}

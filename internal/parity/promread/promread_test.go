package promread_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// fixed answers every instant query with vec and every range query with mat.
type fixed struct {
	vec model.Vector
	mat model.Matrix
	err error
}

func (f fixed) Query(context.Context, string, time.Time, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return f.vec, nil, nil, f.err
}

func (f fixed) QueryRange(context.Context, string, v1.Range, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return f.mat, nil, nil, f.err
}

func (f fixed) Rules(context.Context, []string) (v1.RulesResult, error) {
	return v1.RulesResult{}, f.err
}

func sample(gs string, v float64) *model.Sample {
	return &model.Sample{Metric: model.Metric{"gray_status": model.LabelValue(gs)}, Value: model.SampleValue(v)}
}

func TestReadTracks(t *testing.T) {
	tests := []struct {
		name         string
		vec          model.Vector
		stable, gray float64 // -1: no value
		why          string
	}{
		{"one series per track gives both values", model.Vector{sample("false", 2), sample("true", 3)}, 2, 3, ""},
		{"a missing track has no value and says so", model.Vector{sample("false", 2)}, 2, -1, "gray track has no series"},
		{"two series on a track are ambiguous, not the worst", model.Vector{sample("false", 2), sample("true", 3), sample("true", 9)}, 2, -1, "gray track has 2 series"},
		{"NaN is no value", model.Vector{sample("false", math.NaN()), sample("true", 3)}, -1, 3, "stable track of x is NaN"},
		{"a negative value is no value", model.Vector{sample("false", 2), sample("true", -3)}, 2, -1, "gray track of x is negative"},
		{"a sample not stamped at the query time is not its answer", model.Vector{sample("false", 2), {Metric: model.Metric{"gray_status": "true"}, Value: 3, Timestamp: model.TimeFromUnix(-86400)}}, 2, -1, "not this query's answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := promread.ReadTracks(context.Background(), fixed{vec: tt.vec}, "x", time.Unix(0, 0), "")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				got  *float64
				want float64
			}{{"stable", got.Stable, tt.stable}, {"gray", got.Gray, tt.gray}} {
				if (c.want < 0) != (c.got == nil) || (c.got != nil && *c.got != c.want) {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if w := strings.Join(got.Why, "; "); !strings.Contains(w, tt.why) || (tt.why == "" && w != "") {
				t.Errorf("why %q, want %q", w, tt.why)
			}
		})
	}
}

func TestReadErrorsKeepTheDetail(t *testing.T) {
	perr := &v1.Error{Type: v1.ErrExec, Msg: "too many samples", Detail: "limit 5e7"}
	_, err := promread.ReadTracks(context.Background(), fixed{err: perr}, "x", time.Unix(0, 0), "")
	if err == nil || !strings.Contains(err.Error(), "limit 5e7") || !errors.As(err, new(*v1.Error)) {
		t.Errorf("error %v, want the API error with its detail", err)
	}
	_, err = promread.Max(context.Background(), fixed{err: context.DeadlineExceeded}, "x", time.Unix(0, 0))
	if err == nil || !strings.Contains(err.Error(), "no answer in time") {
		t.Errorf("error %v, want a timeout said as such", err)
	}
}

func TestRangeKeepsFinitePointsOfTheFirstSeries(t *testing.T) {
	mat := model.Matrix{{Values: []model.SamplePair{{Timestamp: 1000, Value: 1}, {Timestamp: 2000, Value: model.SampleValue(math.Inf(1))}, {Timestamp: 3000, Value: 3}}}}
	pts, err := promread.Range(context.Background(), fixed{mat: mat}, "x", time.Unix(0, 0), time.Unix(3, 0), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].V != 1 || pts[1].V != 3 || !pts[1].T.Equal(time.Unix(3, 0)) {
		t.Errorf("points %+v, want 1 at 1s and 3 at 3s", pts)
	}
}

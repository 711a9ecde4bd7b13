package parity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
)

// This file reads Prometheus: the rules loaded, the alerts, instant and
// range values per track. It decides nothing.

// Querier is the part of the Prometheus HTTP API the evaluator uses;
// v1.NewAPI's result implements it. Implementations must be safe for
// concurrent use if the evaluator is used concurrently.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
	Rules(ctx context.Context, matches []string) (v1.RulesResult, error)
}

// LoadedRules returns the names of the recording rules Prometheus has loaded.
func LoadedRules(ctx context.Context, q Querier) (map[string]bool, error) {
	res, err := q.Rules(ctx, nil)
	if err != nil {
		return nil, DescribeQueryError(err)
	}
	loaded := map[string]bool{}
	for _, g := range res.Groups {
		for _, rule := range g.Rules {
			if rr, ok := rule.(v1.RecordingRule); ok {
				loaded[rr.Name] = true
			}
		}
	}
	return loaded, nil
}

// scalar runs an instant query and returns its single value, the largest
// when several series match, or nil for none or NaN.
func scalar(ctx context.Context, q Querier, expr string, at time.Time) (*float64, error) {
	val, _, _, err := q.Query(ctx, expr, at)
	if err != nil {
		return nil, fmt.Errorf("parity: querying %q: %w", expr, DescribeQueryError(err))
	}
	var out *float64
	keep := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		if out == nil || f > *out {
			out = ptr(f)
		}
	}
	switch v := val.(type) {
	case model.Vector:
		for _, s := range v {
			keep(float64(s.Value))
		}
	case *model.Scalar:
		keep(float64(v.Value))
	}
	return out, nil
}

// readPools returns each sync.Pool's hit ratio and gets per second per
// track, from the catalog's sync.Pool SLI rules (none without that SLI).
func readPools(ctx context.Context, q Querier, cat catalog.Catalog, w, selector string, at time.Time) ([]PoolRatio, error) {
	s, ok := cat.Get(catalog.SyncPoolHitRatio)
	if !ok {
		return nil, nil
	}
	query := func(expr string) (model.Vector, error) {
		val, _, _, err := q.Query(ctx, expr, at)
		if err != nil {
			return nil, fmt.Errorf("parity: querying %q: %w", expr, err)
		}
		v, _ := val.(model.Vector)
		return v, nil
	}
	hits, err := query(s.Rule + w + sel(selector))
	if err != nil {
		return nil, err
	}
	gets, err := query(s.WeightRule + w + sel(selector))
	if err != nil {
		return nil, err
	}
	rate := map[string]float64{}
	for _, g := range gets {
		rate[string(g.Metric["gray_status"])+"/"+string(g.Metric["pool"])] += float64(g.Value)
	}
	var out []PoolRatio
	for _, h := range hits {
		gs, pool := string(h.Metric["gray_status"]), string(h.Metric["pool"])
		out = append(out, PoolRatio{Track: trackName(gs), Pool: pool, HitRatio: float64(h.Value), GetsRate: rate[gs+"/"+pool]})
	}
	slices.SortFunc(out, func(a, b PoolRatio) int { return strings.Compare(a.Track+a.Pool, b.Track+b.Pool) })
	return out, nil
}

func trackName(grayStatus string) string {
	if grayStatus == "true" {
		return "gray"
	}
	return "stable"
}

// ReadAlerts returns the pending and firing alerts of the rule groups whose
// name contains groupMatch, sorted by state (firing first) and name.
func ReadAlerts(ctx context.Context, q Querier, groupMatch string) ([]Alert, error) {
	res, err := q.Rules(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("parity: reading the rules: %w", err)
	}
	out := []Alert{}
	for _, g := range res.Groups {
		if !strings.Contains(g.Name, groupMatch) {
			continue
		}
		for _, rule := range g.Rules {
			ar, ok := rule.(v1.AlertingRule)
			if !ok {
				continue
			}
			for _, a := range ar.Alerts {
				if a == nil || (a.State != v1.AlertStateFiring && a.State != v1.AlertStatePending) {
					continue
				}
				labels := make(map[string]string, len(a.Labels))
				for k, v := range a.Labels {
					labels[string(k)] = string(v)
				}
				out = append(out, Alert{
					Name: ar.Name, State: string(a.State), Severity: labels["severity"],
					Summary: string(a.Annotations["summary"]), ActiveAt: a.ActiveAt.UTC(), Value: a.Value, Labels: labels,
				})
			}
		}
	}
	slices.SortFunc(out, func(a, b Alert) int {
		if a.State != b.State {
			return strings.Compare(a.State, b.State) // "firing" < "pending"
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// ChartSLIs are the SLIs the report charts, besides the request rate.
var ChartSLIs = []catalog.ID{catalog.LatencyP99, catalog.HeapAllocPerRequest, catalog.SyncPoolHitRatio}

// Charts returns the time series of ChartSLIs (those the catalog holds)
// and of the request rate per track between start and end, from the rules
// of window family w with the matchers selector.
func Charts(ctx context.Context, q Querier, cat catalog.Catalog, w, selector string, start, end time.Time, step time.Duration) ([]Chart, error) {
	type spec struct {
		title string
		unit  Unit
		query func(m string) string
	}
	var specs []spec
	for _, id := range ChartSLIs {
		s, ok := cat.Get(id)
		if !ok {
			continue
		}
		title := s.Name
		if s.WeightRule != "" {
			title += " (gets-weighted)"
		}
		specs = append(specs, spec{title, s.Unit, func(m string) string { return s.TrackQuery(w, join(selector, m)) }})
	}
	specs = append(specs, spec{"requests per second", PerSec, func(m string) string {
		return "sum(" + cat.Guard.RequestRule + w + sel(selector, m) + ")"
	}})
	var out []Chart
	for _, s := range specs {
		ch := Chart{Title: s.title, Unit: s.unit}
		for _, tr := range []struct{ name, m string }{{"stable", stableM}, {"gray", grayM}} {
			expr := s.query(tr.m)
			val, _, _, err := q.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
			if err != nil {
				return nil, fmt.Errorf("parity: querying range %q: %w", expr, err)
			}
			ser := Series{Name: tr.name}
			if m, ok := val.(model.Matrix); ok && len(m) > 0 {
				for _, p := range m[0].Values {
					if f := float64(p.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
						ser.Points = append(ser.Points, Point{T: p.Timestamp.Time().UTC(), V: f})
					}
				}
			}
			ch.Series = append(ch.Series, ser)
		}
		out = append(out, ch)
	}
	return out, nil
}

// join joins matcher lists, skipping empty ones.
func join(m ...string) string {
	return strings.Trim(strings.Join(slices.DeleteFunc(m, func(s string) bool { return s == "" }), ","), ",")
}

func ptr(f float64) *float64 { return &f }

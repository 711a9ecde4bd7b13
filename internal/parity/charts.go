package parity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Querier is the part of the Prometheus HTTP API the evaluator uses
// (promread.Querier); v1.NewAPI's result implements it.
type Querier = promread.Querier

// readPools returns each sync.Pool's hit ratio and gets per second per
// track, from the catalog's sync.Pool SLI rules (none without that SLI).
func readPools(ctx context.Context, q Querier, cat catalog.Catalog, w, selector string, at time.Time) ([]PoolRatio, error) {
	s, ok := cat.Get(catalog.SyncPoolHitRatio)
	if !ok {
		return nil, nil
	}
	out, err := promread.Pools(ctx, q, s.Rule+w+sel(selector), s.WeightRule+w+sel(selector), at)
	if err != nil {
		return nil, fmt.Errorf("parity: %w", err)
	}
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
			pts, err := promread.Range(ctx, q, s.query(tr.m), start, end, step)
			if err != nil {
				return nil, fmt.Errorf("parity: %w", err)
			}
			ch.Series = append(ch.Series, Series{Name: tr.name, Points: pts})
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

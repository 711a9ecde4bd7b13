package main

import (
	"context"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// memStore is an in-memory float series store the PromQL engine can query
// (storage.Queryable). It keeps the module free of the TSDB, whose config
// package pulls in cloud SDKs. Appends must come in time order per series.
// Not safe for concurrent use: one run uses it from one goroutine.
type memStore struct {
	series map[string]*memSeries
}

type memSeries struct {
	lset    labels.Labels
	samples []point
}

// point is one float sample; it implements chunks.Sample.
type point struct {
	t int64
	f float64
}

func (p point) T() int64                      { return p.t }
func (p point) ST() int64                     { return 0 }
func (p point) F() float64                    { return p.f }
func (p point) H() *histogram.Histogram       { return nil }
func (p point) FH() *histogram.FloatHistogram { return nil }
func (p point) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (p point) Copy() chunks.Sample           { return p }

func newMemStore() *memStore { return &memStore{series: map[string]*memSeries{}} }

// append adds a sample; a sample at or before the series' last one replaces nothing and is
// dropped, as Prometheus drops out-of-order samples.
func (m *memStore) append(l labels.Labels, t int64, f float64) {
	key := l.String()
	s, ok := m.series[key]
	if !ok {
		s = &memSeries{lset: l}
		m.series[key] = s
	}
	if n := len(s.samples); n > 0 && s.samples[n-1].t >= t {
		return
	}
	s.samples = append(s.samples, point{t, f})
}

func (m *memStore) Querier(mint, maxt int64) (storage.Querier, error) {
	return &memQuerier{m: m, mint: mint, maxt: maxt}, nil
}

type memQuerier struct {
	m          *memStore
	mint, maxt int64
}

func (q *memQuerier) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	keys := make([]string, 0, len(q.m.series))
	for k := range q.m.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := q.m.series[k]
		match := true
		for _, mt := range ms {
			if !mt.Matches(s.lset.Get(mt.Name)) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		lo, _ := slices.BinarySearchFunc(s.samples, q.mint, func(p point, t int64) int { return cmpInt(p.t, t) })
		hi, found := slices.BinarySearchFunc(s.samples, q.maxt, func(p point, t int64) int { return cmpInt(p.t, t) })
		if found {
			hi++
		}
		if lo >= hi {
			continue
		}
		samples := make([]chunks.Sample, 0, hi-lo)
		for _, p := range s.samples[lo:hi] {
			samples = append(samples, p)
		}
		out = append(out, storage.NewListSeries(s.lset, samples))
	}
	slices.SortFunc(out, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &listSet{series: out, i: -1}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (q *memQuerier) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *memQuerier) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (q *memQuerier) Close() error { return nil }

type listSet struct {
	series []storage.Series
	i      int
}

func (s *listSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *listSet) At() storage.Series                { return s.series[s.i] }
func (s *listSet) Err() error                        { return nil }
func (s *listSet) Warnings() annotations.Annotations { return nil }

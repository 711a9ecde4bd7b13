package main

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// engineQuerier answers the judge's queries (parity.Querier) from the Prometheus engine and
// storage of one run, as the HTTP API of a Prometheus running the same rules would. Its
// Rules lists the recording rules only, each group at its evaluation interval (the poolparity.counts
// group's is the count-based test's step): the judge's threshold verdict is measured on the rows,
// and the alerts are measured separately.
type engineQuerier struct {
	engine  *promql.Engine
	storage storage.Queryable
	groups  []ruleGroup // the rule groups loaded
}

func (q *engineQuerier) Query(ctx context.Context, qs string, ts time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	qry, err := q.engine.NewInstantQuery(ctx, q.storage, nil, qs, ts)
	val, err := execute(ctx, qs, qry, err, func(val parser.Value) (model.Value, error) {
		switch v := val.(type) {
		case promql.Vector:
			out := make(model.Vector, 0, len(v))
			for _, s := range v {
				out = append(out, &model.Sample{Metric: metric(s.Metric), Value: model.SampleValue(s.F), Timestamp: model.Time(s.T)})
			}
			return out, nil
		case promql.Scalar:
			return &model.Scalar{Value: model.SampleValue(v.V), Timestamp: model.Time(v.T)}, nil
		case promql.Matrix: // a range selector, as the count-based test reads raw counters
			return matrix(v), nil
		}
		return nil, fmt.Errorf("query %s: unexpected result type %s", qs, val.Type())
	})
	return val, nil, nil, err
}

func (q *engineQuerier) QueryRange(ctx context.Context, qs string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	qry, err := q.engine.NewRangeQuery(ctx, q.storage, nil, qs, r.Start, r.End, r.Step)
	val, err := execute(ctx, qs, qry, err, func(val parser.Value) (model.Value, error) {
		m, ok := val.(promql.Matrix)
		if !ok {
			return nil, fmt.Errorf("range query %s: unexpected result type %s", qs, val.Type())
		}
		return matrix(m), nil
	})
	return val, nil, nil, err
}

// matrix converts the engine's matrix to the HTTP API's.
func matrix(m promql.Matrix) model.Matrix {
	out := make(model.Matrix, 0, len(m))
	for _, s := range m {
		ss := &model.SampleStream{Metric: metric(s.Metric)}
		for _, p := range s.Floats {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.Time(p.T), Value: model.SampleValue(p.F)})
		}
		out = append(out, ss)
	}
	return out
}

func (q *engineQuerier) Rules(context.Context, []string) (v1.RulesResult, error) {
	var out v1.RulesResult
	for _, g := range q.groups {
		if len(g.records) == 0 {
			continue
		}
		rg := v1.RuleGroup{Name: g.name, Interval: g.interval.Seconds()}
		for _, name := range g.records {
			rg.Rules = append(rg.Rules, v1.RecordingRule{Name: name, Health: v1.RuleHealthGood})
		}
		out.Groups = append(out.Groups, rg)
	}
	return out, nil
}

// execute runs a query just created and converts its result with conv before closing it:
// Close hands the result's point slices back to the engine's pool, where another query (of
// another run, when runs are replayed in parallel) reuses them.
func execute(ctx context.Context, qs string, qry promql.Query, err error, conv func(parser.Value) (model.Value, error)) (model.Value, error) {
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", qs, err)
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("query %s: %w", qs, res.Err)
	}
	return conv(res.Value)
}

func metric(ls labels.Labels) model.Metric {
	m := model.Metric{}
	ls.Range(func(l labels.Label) { m[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
	return m
}

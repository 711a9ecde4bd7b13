package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"sigs.k8s.io/yaml"
)

// ruleFile is the part of a Prometheus rules file the evaluator reads.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Record string            `json:"record"`
	Alert  string            `json:"alert"`
	Expr   string            `json:"expr"`
	For    string            `json:"for"`
	Labels map[string]string `json:"labels"`

	forDur time.Duration
	// activeAt is when each alert series (by its labels) started to be returned.
	activeAt map[string]time.Duration
}

// ruleEvaluator evaluates a rules file the way Prometheus' rule manager does, group by group
// and rule by rule at each evaluation time: a recording rule's result is written to the
// storage before the next rule reads it, and an alert fires once its expression has returned
// a series for its for: duration. (Prometheus' own rules package would pull its notifier's and
// service discovery's cloud SDKs into this module; this is the part of it the rules use.)
type ruleEvaluator struct {
	engine  *promql.Engine
	storage *memStore
	rules   []*rule
	records []string
}

func newRuleEvaluator(path string, engine *promql.Engine, st *memStore) (*ruleEvaluator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the rules: %w", err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	ev := &ruleEvaluator{engine: engine, storage: st}
	for _, g := range f.Groups {
		for i := range g.Rules {
			r := g.Rules[i]
			if r.For != "" {
				if r.forDur, err = time.ParseDuration(r.For); err != nil {
					return nil, fmt.Errorf("alert %s: for: %w", r.Alert, err)
				}
			}
			r.activeAt = map[string]time.Duration{}
			ev.rules = append(ev.rules, &r)
			if r.Record != "" {
				ev.records = append(ev.records, r.Record)
			}
		}
	}
	return ev, nil
}

// eval evaluates every rule at t0+at and returns the alerts firing then, with their
// severity.
func (ev *ruleEvaluator) eval(ctx context.Context, t0 time.Time, at time.Duration) (map[string]string, error) {
	ts := t0.Add(at)
	firing := map[string]string{}
	for _, r := range ev.rules {
		q, err := ev.engine.NewInstantQuery(ctx, ev.storage, nil, r.Expr, ts)
		if err != nil {
			return nil, fmt.Errorf("rule %s%s: %w", r.Record, r.Alert, err)
		}
		res := q.Exec(ctx)
		vec, err := res.Vector()
		if err != nil {
			q.Close()
			return nil, fmt.Errorf("rule %s%s at %s: %w", r.Record, r.Alert, at, err)
		}
		if r.Record != "" {
			for _, s := range vec {
				b := labels.NewBuilder(s.Metric)
				b.Set(model.MetricNameLabel, r.Record)
				for k, v := range r.Labels {
					b.Set(k, v)
				}
				ev.storage.append(b.Labels(), ts.UnixMilli(), s.F)
			}
		} else {
			seen := map[string]bool{}
			for _, s := range vec {
				key := s.Metric.String()
				seen[key] = true
				since, ok := r.activeAt[key]
				if !ok {
					r.activeAt[key], since = at, at
				}
				if at-since >= r.forDur {
					firing[r.Alert] = r.Labels["severity"]
				}
			}
			for key := range r.activeAt {
				if !seen[key] {
					delete(r.activeAt, key) // resolved: a new episode starts pending again
				}
			}
		}
		q.Close()
	}
	return firing, nil
}

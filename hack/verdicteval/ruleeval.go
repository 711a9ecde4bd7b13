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
		Name     string `json:"name"`
		Interval string `json:"interval"`
		Rules    []rule `json:"rules"`
	} `json:"groups"`
}

// ruleGroup is a group of rules evaluated together every interval.
type ruleGroup struct {
	name     string
	interval time.Duration
	rules    []*rule
	records  []string // the recording rules' names
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

// ruleEvaluator evaluates a rules file the way Prometheus' rule manager does: each group every
// its interval (the global evaluation interval where it gives none), its rules in order, so a
// recording rule's result is written to the storage before the next rule reads it, and an alert
// fires once its expression has returned a series for its for: duration. Groups due at the same
// time are evaluated in file order, all at the same multiples of their intervals (Prometheus
// staggers them by a per-group offset; the rules here read no other group's records). (Prometheus'
// own rules package would pull its notifier's and service discovery's cloud SDKs into this
// module; this is the part of it the rules use.)
type ruleEvaluator struct {
	engine  *promql.Engine
	storage *memStore
	groups  []ruleGroup
	// tick is the greatest common divisor of the groups' intervals: every evaluation falls on
	// a multiple of it.
	tick time.Duration
}

// newRuleEvaluator loads the rules file at path; a group without an interval is evaluated every
// global.
func newRuleEvaluator(path string, global time.Duration, engine *promql.Engine, st *memStore) (*ruleEvaluator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the rules: %w", err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if global <= 0 {
		return nil, fmt.Errorf("the global evaluation interval %s is not positive", global)
	}
	ev := &ruleEvaluator{engine: engine, storage: st}
	for _, g := range f.Groups {
		rg := ruleGroup{name: g.Name, interval: global}
		if g.Interval != "" {
			d, err := model.ParseDuration(g.Interval)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("group %s: interval %q is not a positive duration", g.Name, g.Interval)
			}
			rg.interval = time.Duration(d)
		}
		for i := range g.Rules {
			r := g.Rules[i]
			if r.For != "" {
				if r.forDur, err = time.ParseDuration(r.For); err != nil {
					return nil, fmt.Errorf("alert %s: for: %w", r.Alert, err)
				}
			}
			r.activeAt = map[string]time.Duration{}
			rg.rules = append(rg.rules, &r)
			if r.Record != "" {
				rg.records = append(rg.records, r.Record)
			}
		}
		ev.groups = append(ev.groups, rg)
		ev.tick = gcd(ev.tick, rg.interval)
	}
	if ev.tick <= 0 {
		return nil, fmt.Errorf("%s has no rule groups", path)
	}
	return ev, nil
}

// gcd returns the greatest common divisor of a and b (b when a is 0).
func gcd(a, b time.Duration) time.Duration {
	for a != 0 {
		a, b = b%a, a
	}
	return b
}

// eval evaluates the groups due at t0+at (at a multiple of their interval) and returns the
// alerts they found firing then, with their severity.
func (ev *ruleEvaluator) eval(ctx context.Context, t0 time.Time, at time.Duration) (map[string]string, error) {
	firing := map[string]string{}
	for _, g := range ev.groups {
		if at%g.interval != 0 {
			continue
		}
		if err := ev.evalGroup(ctx, g, t0.Add(at), at, firing); err != nil {
			return nil, err
		}
	}
	return firing, nil
}

// evalGroup evaluates the rules of g at ts (at since t0) in order, adding the alerts firing to
// firing.
func (ev *ruleEvaluator) evalGroup(ctx context.Context, g ruleGroup, ts time.Time, at time.Duration, firing map[string]string) error {
	for _, r := range g.rules {
		q, err := ev.engine.NewInstantQuery(ctx, ev.storage, nil, r.Expr, ts)
		if err != nil {
			return fmt.Errorf("rule %s%s: %w", r.Record, r.Alert, err)
		}
		res := q.Exec(ctx)
		vec, err := res.Vector()
		if err != nil {
			q.Close()
			return fmt.Errorf("rule %s%s at %s: %w", r.Record, r.Alert, at, err)
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
	return nil
}

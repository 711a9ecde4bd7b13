package promread

import (
	"context"
	"slices"

	"github.com/prometheus/prometheus/promql/parser"
)

// RuleReads is what the loaded rules read: per recording rule (by the
// name it records) and per alerting rule (by its alert name), the metric
// names of its query's vector selectors, each once, sorted. Rules loaded
// under one name several times (an alert per quantile) read the union.
type RuleReads struct {
	Records, Alerts map[string][]string
}

// ReadRuleReads reads every loaded rule and what its query reads (see
// ReadRuleSet; the answer may be shared: it is read-only). A query
// Prometheus loaded but this parser cannot read is an error naming the
// rule.
func ReadRuleReads(ctx context.Context, q Querier) (RuleReads, error) {
	set, err := ReadRuleSet(ctx, q)
	if err != nil {
		return RuleReads{}, err
	}
	if set.unreadable != nil {
		return RuleReads{}, set.unreadable
	}
	return set.Reads, nil
}

// Raw returns the raw metric names that the recording rules or alerts
// named by roots read, through any chain of recording rules, each once,
// sorted: the names no loaded recording rule records. A root that is no
// loaded rule is returned as a raw name: pass only loaded alerts.
func (rr RuleReads) Raw(roots ...string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		reads, isRecord := rr.Records[name]
		if alert, isAlert := rr.Alerts[name]; isAlert && !isRecord {
			reads, isRecord = alert, true
		}
		if !isRecord {
			out = append(out, name)
			return
		}
		for _, n := range reads {
			walk(n)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	slices.Sort(out)
	return out
}

// selectorNames returns the metric names of query's vector selectors.
func selectorNames(query string) ([]string, error) {
	if query == "" {
		return nil, nil
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" && !slices.Contains(names, vs.Name) {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}

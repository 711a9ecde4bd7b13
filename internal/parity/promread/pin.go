package promread

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// ErrWidened is returned (wrapped) for a query that selects series outside
// the label value it is pinned to.
var ErrWidened = errors.New("the query reaches outside its pinned label value")

// labelName is a label name in Prometheus' classic character set, the only
// one a selector built here may name.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// CheckLabelName returns an error unless name is a classic Prometheus label
// name ([a-zA-Z_][a-zA-Z0-9_]*): a key of a user's label map becomes a
// matcher, and anything else could change the query around it.
func CheckLabelName(name string) error {
	if !labelName.MatchString(name) {
		return fmt.Errorf("label name %q: want letters, digits and '_', not starting with a digit", name)
	}
	return nil
}

// Pin returns a Querier that sends every query of q with the matcher
// label="value" on each of its series selectors, added to the parsed
// query by the Prometheus PromQL parser (as prom-label-proxy does), never
// by string building. A query that already names label with another
// matcher, or that does not parse, is refused with an error wrapping
// ErrWidened and is not sent. Rules are passed through: they are the rule
// definitions, not series. Safe for concurrent use if q is.
func Pin(q Querier, label, value string) (Querier, error) {
	if err := CheckLabelName(label); err != nil {
		return nil, fmt.Errorf("pinning queries: %w", err)
	}
	if value == "" {
		return nil, fmt.Errorf("pinning queries: %s has no value", label)
	}
	return pinned{q: q, label: label, value: value}, nil
}

type pinned struct {
	q            Querier
	label, value string
}

func (p pinned) Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	pq, err := PinQuery(query, p.label, p.value)
	if err != nil {
		return nil, nil, nil, err
	}
	return p.q.Query(ctx, pq, ts, opts...)
}

func (p pinned) QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	pq, err := PinQuery(query, p.label, p.value)
	if err != nil {
		return nil, nil, nil, err
	}
	return p.q.QueryRange(ctx, pq, r, opts...)
}

func (p pinned) Rules(ctx context.Context, matches []string) (v1.RulesResult, error) {
	return p.q.Rules(ctx, matches)
}

// RuleSet passes through too, from q's cache when it has one.
func (p pinned) RuleSet(ctx context.Context) (RuleSet, error) { return ReadRuleSet(ctx, p.q) }

// PinQuery parses query and returns it with label="value" on every series
// selector. A selector with another matcher on label (a different value, a
// regular expression, a negation) is refused: it would read, or try to
// read, outside value.
func PinQuery(query, label, value string) (string, error) {
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		return "", fmt.Errorf("%w: parsing %q: %w", ErrWidened, query, err)
	}
	var bad error
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || bad != nil {
			return nil
		}
		has := false
		for _, m := range vs.LabelMatchers {
			if m.Name != label {
				continue
			}
			if m.Type != labels.MatchEqual || m.Value != value {
				bad = fmt.Errorf("%w: %s selects %s %s %q, pinned to %q", ErrWidened, vs.String(), label, m.Type, m.Value, value)
				return bad
			}
			has = true
		}
		if !has {
			vs.LabelMatchers = append(vs.LabelMatchers, labels.MustNewMatcher(labels.MatchEqual, label, value))
		}
		return nil
	})
	if bad != nil {
		return "", bad
	}
	return expr.String(), nil
}

package promread_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

func TestPinQuery(t *testing.T) {
	tests := []struct {
		name, query, want string
		widened           bool
	}{
		{"a selector gets the namespace", `job_gray_status:http_requests:rate5m{job="a"}`, `job_gray_status:http_requests:rate5m{job="a",namespace="shop"}`, false},
		{"the same namespace is kept once", `x{namespace="shop"}`, `x{namespace="shop"}`, false},
		{"every selector of a binary expression is pinned", `rate(a[5m]) / on() b`, `rate(a{namespace="shop"}[5m]) / on () b{namespace="shop"}`, false},
		{"a subquery is pinned", `max_over_time(a[10m:1m])`, `max_over_time(a{namespace="shop"}[10m:1m])`, false},
		{"another namespace is refused", `x{namespace="victim"}`, "", true},
		{"a regular expression on the namespace is refused", `x{namespace=~".+"}`, "", true},
		{"a negated namespace is refused", `x{namespace!="shop"}`, "", true},
		{"the reported injection is pinned, and its victim refused",
			`rule{c="d"} or label_replace(victim_revenue_eur_total{namespace="victim"}, "gray_status", "true", "", "") or x{c="v"}`, "", true},
		{"an injection that names no namespace reads only the pinned one",
			`rule{c="d"} or label_replace(victim_revenue_eur_total, "gray_status", "true", "", "")`,
			`rule{c="d",namespace="shop"} or label_replace(victim_revenue_eur_total{namespace="shop"}, "gray_status", "true", "", "")`, false},
		{"a query that does not parse is refused", `x{`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := promread.PinQuery(tt.query, "namespace", "shop")
			if tt.widened {
				if !errors.Is(err, promread.ErrWidened) {
					t.Fatalf("PinQuery = %q, %v; want ErrWidened", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("PinQuery = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// recorder records the queries it is sent.
type recorder struct {
	fixed
	sent []string
}

func (r *recorder) Query(_ context.Context, q string, _ time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	r.sent = append(r.sent, q)
	return model.Vector{}, nil, nil, nil
}

func TestPinSendsOnlyPinnedQueries(t *testing.T) {
	rec := &recorder{}
	q, err := promread.Pin(rec, "namespace", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := q.Query(context.Background(), `x{namespace="victim"}`, time.Now()); !errors.Is(err, promread.ErrWidened) {
		t.Errorf("a widening query gave %v", err)
	}
	if _, _, _, err := q.Query(context.Background(), `x`, time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(rec.sent) != 1 || rec.sent[0] != `x{namespace="shop"}` {
		t.Errorf("sent %q, want only the pinned query", rec.sent)
	}
	for _, bad := range []string{`a"b`, "", "0x"} {
		if _, err := promread.Pin(rec, bad, "v"); err == nil {
			t.Errorf("Pin accepted the label name %q", bad)
		}
	}
}

// FuzzPinQuery holds PinQuery to its contract on any input: it never panics, and a query it
// returns parses and has namespace="shop" on every series selector and no other namespace
// matcher.
func FuzzPinQuery(f *testing.F) {
	for _, s := range []string{`x`, `rate(a{b="c"}[5m])`, `x{namespace="shop"} or y`, `sum by (n) (a) / ignoring(x) b[5m:1m] offset 1m`,
		`label_replace(v{namespace="o"}, "a", "b", "", "")`, `{__name__=~"a.*"}`, `x @ 100`, `-a`, `a > bool 1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		out, err := promread.PinQuery(query, "namespace", "shop")
		if err != nil {
			if !errors.Is(err, promread.ErrWidened) {
				t.Fatalf("error %v is not ErrWidened", err)
			}
			return
		}
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(out)
		if err != nil {
			t.Fatalf("pinned query %q does not parse: %v", out, err)
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			found := 0
			for _, m := range vs.LabelMatchers {
				if m.Name != "namespace" {
					continue
				}
				if m.Type != labels.MatchEqual || m.Value != "shop" {
					t.Fatalf("pinned query %q selects %s", out, m)
				}
				found++
			}
			if found == 0 {
				t.Fatalf("pinned query %q has a selector without the namespace: %s", out, vs)
			}
			return nil
		})
	})
}

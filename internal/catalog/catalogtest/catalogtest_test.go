package catalogtest_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/catalog/catalogtest"
)

func TestWriteRules(t *testing.T) {
	rec := httptest.NewRecorder()
	catalogtest.WriteRules(rec)
	var body struct {
		Status string
		Data   struct {
			Groups []struct {
				Rules []struct{ Type, Name, Health string }
			}
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Status != "success" || len(body.Data.Groups) != 1 {
		t.Fatalf("%s: %v", rec.Body, err)
	}
	var names []string
	for _, r := range body.Data.Groups[0].Rules {
		if r.Type != "recording" || r.Health != "ok" {
			t.Errorf("rule %+v", r)
		}
		names = append(names, r.Name)
	}
	c := catalog.Default()
	for _, want := range []string{c.Guard.RequestRule + "5m", c.Guard.MinTrackRule + "1m", c.SLIs[0].Rules("5m")[0]} {
		if !slices.Contains(names, want) {
			t.Errorf("no rule %s in %v", want, names)
		}
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestWriteRulesWithCounts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		write      func(*httptest.ResponseRecorder)
		wantGroups int
	}{
		{"without the counts group", func(r *httptest.ResponseRecorder) { catalogtest.WriteRules(r) }, 1},
		{"with the counts group every 20 s", func(r *httptest.ResponseRecorder) { catalogtest.WriteRulesWithCounts(r, 20*time.Second) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.write(rec)
			var body struct {
				Data struct {
					Groups []struct {
						Name     string
						Interval float64
						Rules    []struct{ Name string }
					}
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Data.Groups) != tc.wantGroups {
				t.Fatalf("%s: %v, want %d groups", rec.Body, err, tc.wantGroups)
			}
			if tc.wantGroups == 1 {
				return
			}
			g := body.Data.Groups[1]
			var names []string
			for _, r := range g.Rules {
				names = append(names, r.Name)
			}
			if g.Name != "poolparity.counts" || g.Interval != 20 || !slices.Equal(names, catalogtest.CountRuleNames(catalog.Default())) {
				t.Errorf("group %s every %v s with %v, want poolparity.counts every 20 s with the count rules", g.Name, g.Interval, names)
			}
		})
	}
}

func TestCountRuleNames(t *testing.T) {
	names := catalogtest.CountRuleNames(catalog.Default())
	for _, s := range catalog.Default().SLIs {
		if s.Counts == nil {
			continue
		}
		if !slices.Contains(names, s.Counts.Requests) || !slices.Contains(names, s.Counts.Num) {
			t.Errorf("%s: %+v not in %v", s.ID, *s.Counts, names)
		}
	}
	if !slices.Contains(names, catalog.CountRequestsRule) || len(names) != len(slices.Compact(slices.Sorted(slices.Values(names)))) {
		t.Errorf("%v: want %s once, every name once", names, catalog.CountRequestsRule)
	}
}

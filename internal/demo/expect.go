package demo

import (
	"fmt"
	"strings"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
	"github.com/poolparity/poolparity/internal/scenario"
)

// Expectation is one expected outcome of a scenario, checked against a
// report.
type Expectation struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
	Got  string `json:"got"`
}

// Expected large effects of the scenarios (the acceptance numbers).
const (
	// GoodAllocRatioMax: a pooled gray allocates at most half of stable's
	// heap bytes per request.
	GoodAllocRatioMax = 0.5
	// GoodHitRatioMin: a pooled gray reuses at least 90% of its objects.
	GoodHitRatioMin = 0.9
)

// LatencyAlert is the alert the regression scenario must fire.
var LatencyAlert = scenario.LatencyAlert

// Expect checks a report against what its scenario should show:
//   - good: heap bytes per request gray/stable <= 0.5, gray sync.Pool hit
//     ratio >= 0.9, latency parity PASS;
//   - regression: latency p99 parity FAIL and PoolParityLatencyRegression
//     firing;
//   - aa: every row PASS and no critical or warning alert firing;
//   - misuse-*: verdict FAIL, and one of the alerts that name the
//     scenario's cause (scenario.Scenario's Alerts) firing.
func Expect(scenarioName string, r parity.Report) []Expectation {
	cat := catalog.Default()
	row := func(id catalog.ID) *parity.Row {
		for i := range r.Rows {
			if r.Rows[i].ID == id {
				return &r.Rows[i]
			}
		}
		return nil
	}
	name := func(id catalog.ID) string {
		s, _ := cat.Get(id)
		return s.Name
	}
	value := func(id catalog.ID) (float64, string) {
		rw := row(id)
		if rw == nil || rw.Value == nil {
			return 0, "no data"
		}
		c := render.Cells(*rw)
		return *rw.Value, c.Compared
	}
	verdict := func(id catalog.ID) parity.Verdict {
		if rw := row(id); rw != nil {
			return rw.Verdict
		}
		return parity.NoData
	}
	firing := func(name string) bool {
		for _, a := range r.Alerts {
			if a.Name == name && a.State == "firing" {
				return true
			}
		}
		return false
	}
	var out []Expectation
	add := func(what string, ok bool, got string) { out = append(out, Expectation{What: what, OK: ok, Got: got}) }

	switch scenarioName {
	case ScenarioGood:
		v, got := value(catalog.HeapAllocPerRequest)
		add(fmt.Sprintf("%s gray/stable <= %.1f", name(catalog.HeapAllocPerRequest), GoodAllocRatioMax), got != "no data" && v <= GoodAllocRatioMax, got)
		v, got = value(catalog.SyncPoolHitRatio)
		add(fmt.Sprintf("gray %s >= %.0f%%", name(catalog.SyncPoolHitRatio), GoodHitRatioMin*100), got != "no data" && v >= GoodHitRatioMin, got)
		p95, p99 := verdict(catalog.LatencyP95), verdict(catalog.LatencyP99)
		add("latency parity PASS", p95 == parity.Pass && p99 == parity.Pass, fmt.Sprintf("p95 %s, p99 %s", p95, p99))
	case ScenarioRegression:
		p99 := verdict(catalog.LatencyP99)
		_, got := value(catalog.LatencyP99)
		add(name(catalog.LatencyP99)+" parity FAIL", p99 == parity.Fail, fmt.Sprintf("%s, %s", p99, got))
		add(LatencyAlert+" firing", firing(LatencyAlert), alertStates(r, LatencyAlert))
	case ScenarioAA:
		var notPass []string
		for _, rw := range r.Rows {
			if rw.Verdict != parity.Pass {
				notPass = append(notPass, rw.SLI+" "+string(rw.Verdict))
			}
		}
		add("every row PASS", len(notPass) == 0, orNone(notPass))
		// Nothing differs between the tracks, so no alert may fire, not
		// even the informational one: PoolParityNoAllocationGain judges
		// pooling only where the gray track takes from its pools.
		var fire []string
		for _, a := range r.Alerts {
			if a.State == "firing" {
				fire = append(fire, a.Name)
			}
		}
		add("no alert firing", len(fire) == 0, orNone(fire))
	default:
		sc, err := scenario.Lookup(scenarioName)
		if err != nil || !sc.IsMisuse() {
			break
		}
		want := sc.Alerts
		add("verdict FAIL", r.Verdict == parity.Fail, string(r.Verdict))
		var fired []string
		for _, name := range want {
			if firing(name) {
				fired = append(fired, name)
			}
		}
		add(strings.Join(want, " or ")+" firing", len(fired) > 0, orNone(fired))
	}
	return out
}

func alertStates(r parity.Report, name string) string {
	for _, a := range r.Alerts {
		if a.Name == name {
			return a.State
		}
	}
	return "inactive"
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func expectationText(es []Expectation) string {
	var parts []string
	for _, e := range es {
		mark := "ok"
		if !e.OK {
			mark = "NO"
		}
		parts = append(parts, fmt.Sprintf("%s: %s [%s]", e.What, e.Got, mark))
	}
	return strings.Join(parts, "; ")
}

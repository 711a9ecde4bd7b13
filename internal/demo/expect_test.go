package demo_test

import (
	"testing"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/demo"
	"github.com/poolparity/poolparity/internal/parity"
)

func row(id catalog.ID, value float64, v parity.Verdict) parity.Row {
	s, _ := catalog.Default().Get(id)
	return parity.Row{ID: id, SLI: s.Name, Value: &value, Verdict: v}
}

func allOK(es []demo.Expectation) bool {
	for _, e := range es {
		if !e.OK {
			return false
		}
	}
	return len(es) > 0
}

func TestExpect(t *testing.T) {
	good := parity.Report{Rows: []parity.Row{
		row(catalog.LatencyP95, 0.97, parity.Pass), row(catalog.LatencyP99, 1.02, parity.Pass),
		row(catalog.HeapAllocPerRequest, 0.31, parity.Pass), row(catalog.SyncPoolHitRatio, 0.98, parity.Pass),
	}}
	leaky := parity.Report{Rows: []parity.Row{
		row(catalog.LatencyP95, 0.97, parity.Pass), row(catalog.LatencyP99, 1.02, parity.Pass),
		row(catalog.HeapAllocPerRequest, 0.8, parity.Pass), row(catalog.SyncPoolHitRatio, 0.98, parity.Pass),
	}}
	slow := parity.Report{
		Rows:   []parity.Row{row(catalog.LatencyP99, 6.1, parity.Fail)},
		Alerts: []parity.Alert{{Name: "PoolParityLatencyRegression", State: "firing", Severity: "critical"}},
	}
	slowPending := parity.Report{
		Rows:   []parity.Row{row(catalog.LatencyP99, 6.1, parity.Fail)},
		Alerts: []parity.Alert{{Name: "PoolParityLatencyRegression", State: "pending", Severity: "critical"}},
	}
	aa := parity.Report{Rows: []parity.Row{row(catalog.LatencyP99, 1.01, parity.Pass), row(catalog.HeapAllocPerRequest, 1.0, parity.Pass)}}
	aaInfo := aa
	aaInfo.Alerts = []parity.Alert{{Name: "PoolParityNoAllocationGain", State: "firing", Severity: "info"}}
	aaWarn := aa
	aaWarn.Alerts = []parity.Alert{{Name: "PoolParityCPUPerRequestRegression", State: "firing", Severity: "warning"}}

	dirty := parity.Report{Verdict: parity.Fail,
		Alerts: []parity.Alert{{Name: "PoolParityDirtyObjects", State: "firing", Severity: "critical"}}}
	dirtyPass := dirty
	dirtyPass.Verdict = parity.Pass
	costly := parity.Report{Verdict: parity.Fail,
		Alerts: []parity.Alert{{Name: "PoolParityCPUPerRequestRegression", State: "firing", Severity: "warning"}}}

	tests := []struct {
		name     string
		scenario string
		report   parity.Report
		want     bool
	}{
		{"a dirty pool caught by its alert meets misuse-dirty", demo.ScenarioMisuseDirty, dirty, true},
		{"the dirty alert without a FAIL verdict does not", demo.ScenarioMisuseDirty, dirtyPass, false},
		{"another cause's alert does not meet misuse-dirty", demo.ScenarioMisuseDirty, costly, false},
		{"a costly reset caught by the CPU alert meets misuse-reset", demo.ScenarioMisuseReset, costly, true},
		{"misuse-retain needs the memory alert", demo.ScenarioMisuseRetain, costly, false},
		{"misuse-hold needs the hit-ratio or allocation alert", demo.ScenarioMisuseHold, slow, false},
		{"a good pool meets the good scenario", demo.ScenarioGood, good, true},
		{"a pool that saves too little misses it", demo.ScenarioGood, leaky, false},
		{"a good pool is no regression", demo.ScenarioRegression, good, false},
		{"a slow gray with its alert firing is the regression", demo.ScenarioRegression, slow, true},
		{"a slow gray whose alert is only pending is not yet", demo.ScenarioRegression, slowPending, false},
		{"equal tracks meet the A/A scenario", demo.ScenarioAA, aa, true},
		{"even an informational alert breaks the A/A scenario", demo.ScenarioAA, aaInfo, false},
		{"a firing warning alert breaks the A/A scenario", demo.ScenarioAA, aaWarn, false},
		{"a slow gray breaks the A/A scenario", demo.ScenarioAA, slow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := demo.Expect(tt.scenario, tt.report)
			if got := allOK(es); got != tt.want {
				t.Errorf("Expect(%s) = %+v, all ok %v, want %v", tt.scenario, es, got, tt.want)
			}
		})
	}
}

package scenario_test

import (
	"slices"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/scenario"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name, scenario string
		wantErr        bool
		check          func(scenario.Scenario) bool
	}{
		{"the regression adds 40ms to the pooled gray", scenario.Regression, false, func(s scenario.Scenario) bool {
			return s.GrayMode == scenario.Pooled && s.FaultLatency == 40*time.Millisecond &&
				slices.Equal(s.GrayEnv(), []string{"FAULT_LATENCY=40ms"}) && s.Want == parity.Fail
		}},
		{"a misuse runs the gray track in the mode of its name", scenario.MisuseDirty, false, func(s scenario.Scenario) bool {
			return s.GrayMode == "misuse-dirty" && s.IsMisuse() && s.GrayEnv() == nil && slices.Equal(s.Alerts, []string{"PoolParityDirtyObjects"})
		}},
		{"good is a pooled gray that must pass with no alert", scenario.Good, false, func(s scenario.Scenario) bool {
			return s.GrayMode == scenario.Pooled && s.StableMode == scenario.Unpooled && s.Want == parity.Pass && len(s.Alerts) == 0 && !s.IsMisuse()
		}},
		{"the kind run's old name is not a scenario", "bad-latency", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Lookup(tt.scenario)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Lookup(%q) error = %v, want error %v", tt.scenario, err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(s) {
				t.Errorf("Lookup(%q) = %+v", tt.scenario, s)
			}
		})
	}
}

func TestNamesAreUniqueAndEveryScenarioIsComplete(t *testing.T) {
	names := scenario.Names()
	if len(names) != 8 {
		t.Errorf("Names() = %v, want the 8 scenarios", names)
	}
	seen := map[string]bool{}
	for _, s := range scenario.All() {
		if seen[s.Name] {
			t.Errorf("scenario %q is listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.StableMode != scenario.Unpooled || s.GrayMode == "" {
			t.Errorf("scenario %q: stable %q, gray %q: the stable track is the unpooled baseline", s.Name, s.StableMode, s.GrayMode)
		}
		if (s.Want == parity.Fail) != (len(s.Alerts) > 0) {
			t.Errorf("scenario %q: want %s with alerts %v: a FAIL scenario names its cause, a PASS one names none", s.Name, s.Want, s.Alerts)
		}
		for _, a := range s.Alerts {
			if !slices.Contains(catalog.Default().Alerts(), a) {
				t.Errorf("scenario %q names the alert %q, which the catalog does not (catalog.Alerts)", s.Name, a)
			}
		}
	}
}

func TestMet(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		verdict  parity.Verdict
		firing   []string
		want     bool
	}{
		{"a quiet PASS meets good", scenario.Good, parity.Pass, nil, true},
		{"any firing alert breaks good", scenario.Good, parity.Pass, []string{"PoolParityNoAllocationGain"}, false},
		{"a FAIL breaks good", scenario.Good, parity.Fail, nil, false},
		{"the latency alert with a FAIL meets the regression", scenario.Regression, parity.Fail, []string{"PoolParityCPUPerRequestRegression", scenario.LatencyAlert}, true},
		{"a FAIL without its alert does not", scenario.Regression, parity.Fail, []string{"PoolParityDirtyObjects"}, false},
		{"its alert without a FAIL does not", scenario.Regression, parity.NoData, []string{scenario.LatencyAlert}, false},
		{"one of several causes is enough", scenario.MisuseHold, parity.Fail, []string{"PoolParityLiveHeapRegression"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Lookup(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Met(tt.verdict, tt.firing); got != tt.want {
				t.Errorf("Met(%s, %v) = %v, want %v", tt.verdict, tt.firing, got, tt.want)
			}
		})
	}
}

func TestNamesFor(t *testing.T) {
	tests := []struct {
		service string
		want    []string
	}{
		{scenario.ServiceReference, []string{scenario.Good, scenario.Regression, scenario.AA, scenario.MisuseHold, scenario.MisuseReset, scenario.MisuseRetain, scenario.MisuseDirty}},
		{scenario.ServiceExample, []string{scenario.Good, scenario.AA, scenario.MisuseCap}},
		{"nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			if got := scenario.NamesFor(tt.service); !slices.Equal(got, tt.want) {
				t.Errorf("NamesFor(%q) = %v, want %v", tt.service, got, tt.want)
			}
		})
	}
}

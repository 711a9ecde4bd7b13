package steps

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/hack/kindrun/kube/kubetest"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

func TestReadinessLogCountsOnlyPodsThatWereReady(t *testing.T) {
	l := newReadinessLog()
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l.observe(kubetest.Pod("a", true, nil), false, at(0))
	l.observe(kubetest.Pod("b", false, nil), false, at(0)) // starting: never ready yet
	l.observe(kubetest.Pod("b", false, nil), false, at(1))
	l.observe(kubetest.Pod("a", false, nil), false, at(2)) // a drop
	l.observe(kubetest.Pod("a", true, nil), false, at(3))
	l.observe(kubetest.Pod("c", true, nil), false, at(4))
	l.observe(kubetest.Pod("c", true, nil), true, at(5)) // deleted while ready: a drop
	l.observe(kubetest.Pod("b", false, nil), true, at(6))
	drops := l.between(at(0), at(10))
	if len(drops) != 2 || drops[0].Pod != "a" || drops[1].Pod != "c" || !drops[1].Deleted {
		t.Fatalf("drops = %+v: want a (not ready) then c (deleted)", drops)
	}
	if got := l.between(at(3), at(10)); len(got) != 1 || got[0].Pod != "c" {
		t.Errorf("drops from +3s = %+v: want c only", got)
	}
	if drops[0].Terminating || !drops[1].Terminating {
		t.Errorf("drops = %+v: a is a readiness failure, c's end is not", drops)
	}
	// A pod being deleted (a scale-down) fails /readyz while it drains: a drop, terminating.
	d := kubetest.Pod("d", true, nil)
	l.observe(d, false, at(7))
	d = kubetest.Pod("d", false, nil)
	now := metav1.NewTime(at(8))
	d.DeletionTimestamp = &now
	l.observe(d, false, at(8))
	if got := l.between(at(7), at(10)); len(got) != 1 || got[0].Pod != "d" || !got[0].Terminating || got[0].Deleted {
		t.Errorf("drops from +7s = %+v: want d, terminating and not yet deleted", got)
	}
}

func TestCheckStepKeptFindsARepeatedOrSkippedStep(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	step0 := canaryPoint{Phase: "Progressing", Step: 0, Weight: 25, StepStart: at(0)}
	deleted := FaultRow{Fault: "controller pod deleted", step: step0, at: at(20)}
	tests := []struct {
		name    string
		history []canaryPoint
		want    string // a problem's text, or "" for none
	}{
		{"a step kept through the restart passes", []canaryPoint{
			step0,
			{Phase: "Progressing", Step: 1, Weight: 50, StepStart: at(61), Analysis: at(61), Verdict: "Pass"},
			{Phase: "Promoted", Step: 1, Weight: 0, StepStart: at(61), Analysis: at(125), Verdict: "Pass"},
		}, ""},
		{"a step restarted by the new controller is a repeat", []canaryPoint{
			step0,
			{Phase: "Progressing", Step: 0, Weight: 25, StepStart: at(30)},
		}, "restarted"},
		{"a step ended before its interval is a skip", []canaryPoint{
			step0,
			{Phase: "Progressing", Step: 1, Weight: 50, StepStart: at(31), Analysis: at(31), Verdict: "Pass"},
		}, "before its interval"},
		{"a step ended without a passed analysis is a skip", []canaryPoint{
			step0,
			{Phase: "Progressing", Step: 1, Weight: 50, StepStart: at(70), Analysis: at(70), Verdict: "NoData"},
		}, "not a pass"},
		{"steps that jump are skipped", []canaryPoint{
			step0,
			{Phase: "Progressing", Step: 2, Weight: 75, StepStart: at(70), Analysis: at(70), Verdict: "Pass"},
		}, "skipped or repeated"},
		{"a rollout stuck in the step did not resume", []canaryPoint{step0}, "never left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := deleted
			checkStepKept(&r, tt.history)
			got := strings.Join(r.Problems, "; ")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckPromotedOnDataWantsAnAnalysisAfterPrometheusReturned(t *testing.T) {
	t0 := time.Unix(1000, 0)
	back := t0.Add(100 * time.Second)
	for _, tt := range []struct {
		name     string
		analysis time.Time
		verdict  string
		ok       bool
	}{
		{"promoted on a pass after the outage", back.Add(70 * time.Second), "Pass", true},
		{"promoted on an analysis made during the outage", back.Add(-10 * time.Second), "Pass", false},
		{"promoted without a pass", back.Add(70 * time.Second), "Error", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := FaultRow{Fault: "prometheus scaled to 0", at: back}
			checkPromotedOnData(&r, []canaryPoint{
				{Phase: "Progressing", Step: 1, Weight: 50},
				{Phase: "Promoted", Step: 1, Analysis: tt.analysis, Verdict: tt.verdict},
			})
			if r.OK() != tt.ok {
				t.Errorf("problems %v, want ok=%v", r.Problems, tt.ok)
			}
		})
	}
}

func TestChaosTablePrintsEveryRowAndWhatFailed(t *testing.T) {
	out := chaosTable([]FaultRow{
		{Fault: "rolling restart gray", Sent: 900, WritesAcked: -1, ReadyDrops: 2, Elapsed: 25 * time.Second},
		{Fault: "redis pod deleted", Sent: 40, Failed: 8, JSON5xx: 8, WritesAcked: 60, WritesLost: 60, Problems: []string{"60 of 60 acknowledged writes lost"}},
		{Fault: "controller pod deleted", noLoad: true, Before: "Progressing@25%", After: "Promoted", Note: "step 0 kept"},
	})
	for _, want := range []string{"rolling restart gray", "900", "60/60", "FAILED: 60 of 60", "Progressing@25% -> Promoted", "ok: step 0 kept"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestErrorKindsCountsTheMostFrequentFirst(t *testing.T) {
	got := errorKinds([]string{"refused", "reset", "refused", "timeout", "refused", "reset"}, 2)
	want := []string{"3x refused", "2x reset", "... and 1 other errors"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("errorKinds = %q, want %q", got, want)
	}
}

// TestLeftBehind: a FAIL after a fault counts only for causes the fault could have made, an alert
// that became active at or after its start or a row that did not fail before it.
func TestLeftBehind(t *testing.T) {
	start := time.Date(2026, 11, 25, 9, 21, 23, 0, time.UTC)
	cpuAlert := func(active time.Time) parity.Alert {
		return parity.Alert{Name: "PoolParityCPUPerRequestRegression", State: "firing", Severity: "warning", ActiveAt: active}
	}
	cpuRow := func(v parity.Verdict) parity.Row { return parity.Row{SLI: "CPU per request", Verdict: v} }
	pass := parity.Report{Verdict: parity.Pass, Rows: []parity.Row{cpuRow(parity.Pass)}}
	tests := []struct {
		name          string
		before, after parity.Report
		left, already int
	}{
		{"a pass leaves nothing", pass, pass, 0, 0},
		{"CI run 8: the alert went active before the freeze; the row's breach the test did not confirm", pass,
			parity.Report{Verdict: parity.Fail, Gate: parity.GateConfirmed, Rows: []parity.Row{{SLI: "CPU per request", Verdict: parity.Fail,
				Test: &parity.TestResult{Verdict: parity.Pass}}}, Alerts: []parity.Alert{cpuAlert(start.Add(-87 * time.Second))}}, 0, 1},
		{"a row failing only after the freeze is left behind", pass,
			parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow(parity.Fail)}, Alerts: []parity.Alert{cpuAlert(start.Add(-87 * time.Second))}}, 1, 1},
		{"alert and row both there before the freeze", parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow(parity.Fail)}},
			parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow(parity.Fail)}, Alerts: []parity.Alert{cpuAlert(start.Add(-time.Minute))}}, 0, 2},
		{"an alert the freeze set off is left behind", pass,
			parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow(parity.Pass)}, Alerts: []parity.Alert{cpuAlert(start.Add(10 * time.Second))}}, 1, 0},
		{"a pending alert is no cause", pass,
			parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow(parity.Pass)}, Alerts: []parity.Alert{{Name: "X", State: "pending"}}, Reasons: []string{"x"}}, 1, 0},
		{"no data after is never excused", pass, parity.Report{Verdict: parity.NoData, Reasons: []string{"too little traffic"}}, 1, 0},
		{"an informational alert is no cause", pass,
			parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow(parity.Fail)}, Alerts: []parity.Alert{{Name: "PoolParityNoAllocationGain", State: "firing", Severity: "info", ActiveAt: start}}}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left, already := leftBehind(tt.before, tt.after, start)
			if len(left) != tt.left || len(already) != tt.already {
				t.Errorf("left %q, already %q; want %d and %d", left, already, tt.left, tt.already)
			}
		})
	}
}

// TestVerdictCause: a verdict judged again before the freeze is noted with its cause, the SLIs its
// gate FAILed, else its reasons.
func TestVerdictCause(t *testing.T) {
	tests := []struct {
		name string
		r    parity.Report
		want string
	}{
		{"a failed row", parity.Report{Verdict: parity.Fail, Rows: []parity.Row{{SLI: "CPU per request", Verdict: parity.Fail}, {SLI: "latency p99", Verdict: parity.Pass}}}, "FAIL (CPU per request)"},
		{"an alert's FAIL names its reasons", parity.Report{Verdict: parity.Fail, Reasons: []string{"alert PoolParityErrorRatio firing"}}, "FAIL (alert PoolParityErrorRatio firing)"},
		{"no data", parity.Report{Verdict: parity.NoData, Reasons: []string{"too little traffic"}}, "NO DATA (too little traffic)"},
		{"nothing to say", parity.Report{Verdict: parity.NoData}, "NO DATA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdictCause(tt.r); got != tt.want {
				t.Errorf("verdictCause = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOverheadOnly: a baseline FAIL is tolerated before the freeze only when CPU per request, its
// row or its alert, is all that FAILs it.
func TestOverheadOnly(t *testing.T) {
	cpuAlert := parity.Alert{Name: "PoolParityCPUPerRequestRegression", State: "firing", Severity: "warning"}
	cpuRow := parity.Row{ID: catalog.CPUPerRequest, SLI: "CPU per request", Verdict: parity.Fail}
	errRow := parity.Row{ID: catalog.ErrorRatio, SLI: "error ratio (5xx)", Verdict: parity.Fail}
	tests := []struct {
		name string
		r    parity.Report
		want bool
	}{
		{"stop 46: the CPU alert alone (the row's breach not confirmed)", parity.Report{Verdict: parity.Fail, Alerts: []parity.Alert{cpuAlert}}, true},
		{"the CPU row alone", parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow}}, true},
		{"another row FAILs too", parity.Report{Verdict: parity.Fail, Rows: []parity.Row{cpuRow, errRow}}, false},
		{"another alert fires", parity.Report{Verdict: parity.Fail, Alerts: []parity.Alert{cpuAlert, {Name: "PoolParityErrorRatioRegression", State: "firing", Severity: "critical"}}}, false},
		{"a FAIL with no cause named", parity.Report{Verdict: parity.Fail, Reasons: []string{"x"}}, false},
		{"no data is no baseline", parity.Report{Verdict: parity.NoData}, false},
		{"a pass needs no excuse", parity.Report{Verdict: parity.Pass}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := overheadOnly(tt.r); got != tt.want {
				t.Errorf("overheadOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

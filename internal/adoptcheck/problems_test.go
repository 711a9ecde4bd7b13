package adoptcheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/adoptcheck"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/parity"
)

// responseBytes is a response-size row's id as the catalog may name it.
const responseBytes catalog.ID = "response-bytes-per-request"

func val(v float64) *float64 { return &v }

// report returns a report with the verdict v, a differential check of outcome d (none when
// empty) and the rows.
func report(v parity.Verdict, d diffcheck.Outcome, rows ...parity.Row) parity.Report {
	r := parity.Report{Verdict: v, Rows: rows}
	if d != "" {
		mismatches := 0
		if d == diffcheck.Fail {
			mismatches = 390
		}
		r.Differential = &diffcheck.Report{Compared: 400, Mismatches: mismatches, Outcome: d}
	}
	return r
}

// reasons returns r with the reasons given.
func reasons(r parity.Report, reasons ...string) parity.Report {
	r.Reasons = reasons
	return r
}

func TestProblems(t *testing.T) {
	sizeFail := parity.Row{ID: responseBytes, Verdict: parity.Fail, Value: val(6.8)}
	poolFail := parity.Row{ID: catalog.SyncPoolHitRatio, Verdict: parity.Fail, Value: val(0)}
	// A threshold FAIL the statistical test cannot confirm: NO DATA under the confirmed gate.
	poolUnconfirmed := parity.Row{ID: catalog.SyncPoolHitRatio, Verdict: parity.Fail, Value: val(0),
		Test: &parity.TestResult{Verdict: parity.NoData, Note: "stable track has no series"}}
	confirmed := func(r parity.Report) parity.Report { r.Gate = parity.GateConfirmed; return r }
	tests := []struct {
		name, mode string
		r          parity.Report
		want       []string // substrings, one per problem; none: no problem
	}{
		{"a pooled PASS with equal responses", adoptcheck.Pooled, report(parity.Pass, diffcheck.Pass), nil},
		{"a pooled FAIL", adoptcheck.Pooled, report(parity.Fail, diffcheck.Pass), []string{"verdict FAIL"}},
		{"a pooled run without a differential check", adoptcheck.Pooled, report(parity.Pass, ""), []string{"no differential check"}},
		{"a never-reset caught by both", adoptcheck.NeverReset, report(parity.Fail, diffcheck.Fail, sizeFail), nil},
		{"a never-reset that passes", adoptcheck.NeverReset, report(parity.Pass, diffcheck.Pass, parity.Row{ID: responseBytes, Verdict: parity.Pass, Value: val(1)}),
			[]string{"verdict PASS", "differential check PASS", "response-size row response-bytes-per-request (as gated): verdict PASS"}},
		{"a never-reset without a response-size row", adoptcheck.NeverReset, report(parity.Fail, diffcheck.Fail), []string{"no response-size row"}},
		{"a never-reset whose responses barely grew", adoptcheck.NeverReset,
			report(parity.Fail, diffcheck.Fail, parity.Row{ID: responseBytes, Verdict: parity.Fail, Value: val(1.2)}), []string{"gray vs stable 1.2, want at least 1.5"}},
		{"a never-put caught by its row", adoptcheck.NeverPut, report(parity.Fail, diffcheck.Pass, poolFail), nil},
		{"a never-put failed by its alert alone", adoptcheck.NeverPut, confirmed(report(parity.Fail, diffcheck.Pass, poolUnconfirmed)),
			[]string{"sync.Pool hit-ratio row (as gated): verdict NO DATA (over the threshold, but the test cannot confirm it yet: stable track has no series)"}},
		{"a never-put without its row", adoptcheck.NeverPut, report(parity.Fail, diffcheck.Pass), []string{"no sync.Pool hit-ratio row"}},
		{"a never-put whose responses changed", adoptcheck.NeverPut, report(parity.Fail, diffcheck.Fail, poolFail), []string{"differential check FAIL"}},
		{"a use after Put caught under load", adoptcheck.UseAfterPut, reasons(report(parity.Fail, diffcheck.Fail), "responses differ (under load, at concurrency 32): mismatch rate 100%"), nil},
		{"a shared buffer caught by its failed requests", adoptcheck.SharedBuffer,
			reasons(report(parity.Fail, diffcheck.Inconclusive), "more failed requests on gray than on stable beyond chance: 29 of 3008 against 0 of 3011"), nil},
		{"a shared buffer caught by the race run", adoptcheck.SharedBuffer, reasons(report(parity.Fail, diffcheck.Pass), "data race in gray under concurrent load"), nil},
		{"a use after Put failed by a row only", adoptcheck.UseAfterPut, reasons(report(parity.Fail, diffcheck.Pass), "cpu-per-request: FAIL"),
			[]string{"no reason names the differential check, the failed requests or a data race (cpu-per-request: FAIL)"}},
		{"a shared buffer that passes", adoptcheck.SharedBuffer, report(parity.Pass, diffcheck.Pass), []string{"verdict PASS", "no reason names"}},
		{"an unknown mode", "misuse-cap", report(parity.Fail, diffcheck.Pass), []string{`unknown gray mode "misuse-cap"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := adoptcheck.Problems(tt.mode, tt.r)
			if len(got) != len(tt.want) {
				t.Fatalf("Problems = %q, want %d problems naming %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// ExampleProblems holds a run's report to what a never-put gray must give: it failed, but through
// its alert alone, the sync.Pool row waiting for a stable pool series an unpooled stable never has.
func ExampleProblems() {
	r := parity.Report{
		Verdict: parity.Fail, Gate: parity.GateConfirmed,
		Differential: &diffcheck.Report{Compared: 400, Outcome: diffcheck.Pass},
		Rows: []parity.Row{{ID: catalog.SyncPoolHitRatio, Verdict: parity.Fail, Value: new(float64),
			Test: &parity.TestResult{Verdict: parity.NoData, Note: "stable track has no series"}}},
	}
	for _, p := range adoptcheck.Problems(adoptcheck.NeverPut, r) {
		fmt.Println(p)
	}
	// Output:
	// sync.Pool hit-ratio row (as gated): verdict NO DATA (over the threshold, but the test cannot confirm it yet: stable track has no series), want FAIL
}

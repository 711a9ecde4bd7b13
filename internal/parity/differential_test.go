package parity_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/parity"
)

func TestAddDifferential(t *testing.T) {
	failing := diffcheck.Report{
		Compared: 200, Mismatches: 40, Rate: 0.2, Low: 0.15, High: 0.26, MaxMismatchRate: 0.01, Outcome: diffcheck.Fail,
		Paths: []diffcheck.PathReport{{Endpoint: "GET /api/v1/items/{n}", Pattern: "$.name", Kind: diffcheck.KindValue, Requests: 40}},
	}
	inconclusive := diffcheck.Report{Compared: 50, Mismatches: 0, High: 0.07, MaxMismatchRate: 0.01, Outcome: diffcheck.Inconclusive}
	passing := diffcheck.Report{Compared: 400, High: 0.009, MaxMismatchRate: 0.01, Outcome: diffcheck.Pass}
	tests := []struct {
		name        string
		verdict     parity.Verdict
		d           diffcheck.Report
		want        parity.Verdict
		firstReason string // a substring of Reasons[0]
		note        string // a substring of the last note; "" for none
	}{
		{"a FAIL fails a passing report, naming the rate and the top path", parity.Pass, failing, parity.Fail,
			"mismatch rate 20.00% [15.00%, 26.00%] of 200 requests compared is over 1.00%, most at GET /api/v1/items/{n} $.name (value, 40 requests)", ""},
		{"a FAIL fails a NO DATA report", parity.NoData, failing, parity.Fail, "responses differ", ""},
		{"a FAIL leaves an ERROR an ERROR", parity.Error, failing, parity.Error, "responses differ", ""},
		{"INCONCLUSIVE is a note only", parity.Pass, inconclusive, parity.Pass, "rows", "differential check inconclusive (INCONCLUSIVE: 0 of 50 requests mismatch"},
		{"PASS changes nothing", parity.Pass, passing, parity.Pass, "rows", ""},
		{"NO DATA is a note only", parity.Fail, diffcheck.Report{Outcome: diffcheck.NoData}, parity.Fail, "rows", "no request could be compared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parity.Report{Verdict: tt.verdict, Reasons: []string{"the rows said so"}}
			r.AddDifferential(tt.d)
			if r.Verdict != tt.want || r.Differential == nil || r.Differential.Outcome != tt.d.Outcome {
				t.Fatalf("verdict %s with %+v, want %s with the check", r.Verdict, r.Differential, tt.want)
			}
			if !strings.Contains(r.Reasons[0], tt.firstReason) || !slices.Contains(r.Reasons, "the rows said so") {
				t.Errorf("reasons %q, want the first to contain %q and the rows' kept", r.Reasons, tt.firstReason)
			}
			switch {
			case tt.note == "" && len(r.Notes) > 0:
				t.Errorf("notes %q, want none", r.Notes)
			case tt.note != "" && (len(r.Notes) == 0 || !strings.Contains(r.Notes[len(r.Notes)-1], tt.note)):
				t.Errorf("notes %q, want one containing %q", r.Notes, tt.note)
			}
		})
	}
}

// ExampleReport_AddDifferential shows a differential check failing a
// report whose rows passed.
func ExampleReport_AddDifferential() {
	r := parity.Report{Verdict: parity.Pass, Reasons: []string{"8 of 8 rows pass"}}
	r.AddDifferential(diffcheck.Report{
		Compared: 200, Mismatches: 200, Rate: 1, Low: 0.98, High: 1, MaxMismatchRate: 0.01, Outcome: diffcheck.Fail,
		Paths: []diffcheck.PathReport{{Endpoint: "GET /thumbnail/{id}", Pattern: "$", Kind: diffcheck.KindBytes, Requests: 200}},
	})
	fmt.Println(r.Verdict)
	fmt.Println(strings.Join(r.Reasons, "; "))
	// Output:
	// FAIL
	// responses differ: mismatch rate 100.00% [98.00%, 100.00%] of 200 requests compared is over 1.00%, most at GET /thumbnail/{id} $ (bytes, 200 requests); 8 of 8 rows pass
}

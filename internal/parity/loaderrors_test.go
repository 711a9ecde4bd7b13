package parity_test

import (
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/parity"
)

func TestAddLoadErrors(t *testing.T) {
	load := func(errs, reqs uint64) loadgen.Stats { return loadgen.Stats{Errors: errs, Requests: reqs} }
	malformed := func(bad, reqs uint64) loadgen.Stats { return loadgen.Stats{Malformed: bad, Requests: reqs} }
	tests := []struct {
		name         string
		verdict      parity.Verdict
		stable, gray loadgen.Stats
		want         parity.Verdict
		reason, note string // substrings of Reasons[0] and of the last note; "" for none
	}{
		{"7 errors against none fail a passing report, naming both counts", parity.Pass, load(0, 6000), load(7, 6000), parity.Fail,
			"more failed requests on gray than on stable beyond chance: gray 7 failed of 6000 requests, stable 0 of 6000: one-sided Fisher exact p = 0.0078 < 0.01 (5xx or no response: gray 7, stable 0; malformed JSON: gray 0, stable 0)", ""},
		{"malformed answers count as failed", parity.Pass, malformed(0, 3000), malformed(18, 3000), parity.Fail,
			"gray 18 failed of 3000 requests, stable 0 of 3000: one-sided Fisher exact p = 3.72e-06 < 0.01 (5xx or no response: gray 0, stable 0; malformed JSON: gray 18, stable 0)", ""},
		{"4 errors against none are a note", parity.Pass, load(0, 6000), load(4, 6000), parity.Pass,
			"", "failed requests, not more on gray than on stable beyond chance: gray 4 failed"},
		{"errors on stable alone are a note", parity.Pass, load(9, 6000), load(0, 6000), parity.Pass, "", "stable 9 of 6000"},
		{"no error adds nothing", parity.Pass, load(0, 6000), load(0, 6000), parity.Pass, "", ""},
		{"a track without requests adds nothing", parity.NoData, load(0, 0), load(50, 50), parity.NoData, "", ""},
		{"a FAIL leaves an ERROR an ERROR", parity.Error, load(0, 100), load(100, 100), parity.Error, "more failed requests on gray", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parity.Report{Verdict: tt.verdict, Reasons: []string{"the rows said so"}}
			r.AddLoadErrors(tt.stable, tt.gray)
			if r.Verdict != tt.want {
				t.Errorf("verdict %s, want %s", r.Verdict, tt.want)
			}
			if tt.reason != "" && !strings.Contains(r.Reasons[0], tt.reason) || tt.reason == "" && len(r.Reasons) != 1 {
				t.Errorf("reasons %q, want the first to contain %q", r.Reasons, tt.reason)
			}
			if r.Reasons[len(r.Reasons)-1] != "the rows said so" {
				t.Errorf("reasons %q, want the rows' kept last", r.Reasons)
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

func TestAddDifferentialNamesHowTheResponsesWereTaken(t *testing.T) {
	r := parity.Report{Verdict: parity.Pass}
	r.AddDifferential(diffcheck.Report{
		Compared: 400, Mismatches: 25, Rate: 0.0625, Low: 0.04, High: 0.09, MaxMismatchRate: 0.01, Outcome: diffcheck.Fail,
		Method: "under load, at concurrency 16",
		Paths:  []diffcheck.PathReport{{Endpoint: "POST /convert", Pattern: "$", Kind: diffcheck.KindInvalidJSON, Requests: 20}},
	})
	want := "responses differ (under load, at concurrency 16): mismatch rate 6.25% [4.00%, 9.00%] of 400 requests compared is over 1.00%, most at POST /convert $ (invalid-json, 20 requests)"
	if r.Verdict != parity.Fail || len(r.Reasons) != 1 || r.Reasons[0] != want {
		t.Errorf("verdict %s, reasons %q; want FAIL with %q", r.Verdict, r.Reasons, want)
	}
}

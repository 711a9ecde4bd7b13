package parity_test

import (
	"context"
	"strings"
	"testing"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestResponseBytesPerRequest: the response-size SLI is a row where its rule is loaded and the
// tracks have its series, a note (never a PASS) where they have none or the rules record none.
func TestResponseBytesPerRequest(t *testing.T) {
	const rule = "job_gray_status:http_response_size_bytes_per_request:ratio_rate1m"
	tests := []struct {
		name        string
		loaded      bool
		values      map[string]float64 // by gray_status; nil: no series
		want        parity.Verdict     // of the row; "" when there is none
		wantNote    string
		wantVerdict parity.Verdict
	}{
		{"equal answers pass", true, map[string]float64{"false": 22700, "true": 22750}, parity.Pass, "", parity.Pass},
		{"a buffer never reset (6.7x the bytes) fails the verdict", true, map[string]float64{"false": 22700, "true": 153000}, parity.Fail, "", parity.Fail},
		{"+60 bytes on 200 is over the ratio but inside the 64-byte floor and passes", true, map[string]float64{"false": 200, "true": 260}, parity.Pass, "", parity.Pass},
		{"+150 bytes on 500 is over the ratio and beyond the floor and fails", true, map[string]float64{"false": 500, "true": 650}, parity.Fail, "", parity.Fail},
		{"rules that read no histogram the service has: a note, not a row", true, nil, "",
			"response bytes per request: not judged, neither track has http_response_size_bytes_count series", parity.Pass},
		{"rules that record no response SLI: a note, not an error", false, nil, "",
			"response bytes per request: not judged, not exported: the loaded rules do not record " + rule, parity.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := goodPool()
			if tt.loaded {
				p.rules.Groups[0].Rules = append(p.rules.Groups[0].Rules, v1.RecordingRule{Name: rule})
			}
			if tt.values != nil {
				p.values[rule] = tt.values
			}
			r, err := parity.Evaluate(context.Background(), p, catalog.Default(), parity.Options{At: at, Window: "1m", Selector: `job="poolparity"`})
			if err != nil {
				t.Fatal(err)
			}
			var row *parity.Row
			for i := range r.Rows {
				if r.Rows[i].ID == catalog.ResponseBytesPerRequest {
					row = &r.Rows[i]
				}
			}
			switch {
			case tt.want == "" && row != nil:
				t.Errorf("row %+v, want none", *row)
			case tt.want != "" && (row == nil || row.Verdict != tt.want):
				t.Errorf("row %+v, want %s", row, tt.want)
			}
			if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, tt.wantNote) {
				t.Errorf("notes %q lack %q", notes, tt.wantNote)
			}
			if r.Verdict != tt.wantVerdict {
				t.Errorf("verdict %s (%q), want %s", r.Verdict, r.Reasons, tt.wantVerdict)
			}
			if tt.want == parity.Fail && !strings.Contains(strings.Join(r.Reasons, "; "), "response bytes per request") {
				t.Errorf("reasons %q do not name the response row", r.Reasons)
			}
		})
	}
}

package parity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestSyncPoolRowJudgedOnTheGrayAlone (issue 38, item 4): the sync.Pool hit ratio is the gray
// track's against its threshold (catalog.GrayAtLeast). An unpooled stable never has syncpool_*
// series, and no gate waits for them: a gray whose pool is never Put back (hit ratio near 0)
// FAILs the row, a healthy gray PASSes it, with no stable pool series in either case. Before
// the fix the confirmed gate (the local mode's default) held the breach at NO DATA: its
// Mann-Whitney test compared gray's samples with stable's, of which there are none.
func TestSyncPoolRowJudgedOnTheGrayAlone(t *testing.T) {
	const hits = "sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate1m"
	neverPut := func() *fakeProm {
		p := goodPool()
		p.values[hits] = map[string]float64{"true": 0.004} // gets that never hit: nothing was Put back
		return p
	}
	onlyPool, err := catalog.Default().Select(catalog.SyncPoolHitRatio)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(g parity.Gate) parity.Options {
		return parity.Options{At: at, Window: "1m", Selector: `job="poolparity"`, Stat: g.Mode(),
			StatWindow: 4 * time.Minute, StatStep: 12 * time.Second, SampleFamily: "-", StatSince: at.Add(-4 * time.Minute)}
	}
	tests := []struct {
		name string
		prom func() *fakeProm
		cat  catalog.Catalog
		gate parity.Gate
		want parity.Verdict
	}{
		{"thresholds: a never-put pool fails", neverPut, catalog.Default(), parity.GateThresholds, parity.Fail},
		{"thresholds: a healthy pool passes", goodPool, catalog.Default(), parity.GateThresholds, parity.Pass},
		{"confirmed: a never-put pool fails without stable pool series", neverPut, catalog.Default(), parity.GateConfirmed, parity.Fail},
		{"confirmed: a healthy pool passes", goodPool, catalog.Default(), parity.GateConfirmed, parity.Pass},
		{"sequential: a never-put pool fails within four minutes", neverPut, catalog.Default(), parity.GateSequential, parity.Fail},
		{"sequential: a healthy pool passes within four minutes", goodPool, catalog.Default(), parity.GateSequential, parity.Pass},
		{"counts: a never-put pool fails within four minutes", neverPut, onlyPool, parity.GateCounts, parity.Fail},
		{"counts: a healthy pool passes within four minutes", goodPool, onlyPool, parity.GateCounts, parity.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parity.Evaluate(context.Background(), tt.prom(), tt.cat, opts(tt.gate))
			if err != nil {
				t.Fatal(err)
			}
			var row *parity.Row
			for i, gr := range r.GateRows() {
				if gr.ID == catalog.SyncPoolHitRatio {
					row = &r.GateRows()[i]
				}
			}
			if row == nil {
				t.Fatalf("no sync.Pool row; notes %q", r.Notes)
			}
			if row.Verdict != tt.want || row.Stable != nil {
				t.Fatalf("sync.Pool row %s (stable %v, note %q, test %+v), want %s without a stable value", row.Verdict, row.Stable, row.Note, row.Test, tt.want)
			}
			if tt.want == parity.Fail && !strings.Contains(strings.Join(r.Reasons, "; "), "sync.Pool hit ratio") {
				t.Errorf("verdict %s, reasons %q: the sync.Pool row must be named", r.Verdict, r.Reasons)
			}
			if tt.want == parity.Fail && r.Verdict != parity.Fail {
				t.Errorf("verdict %s (%q), want FAIL", r.Verdict, r.Reasons)
			}
		})
	}
}

// TestJudgeGrayOnly: the statistical test of a gray-only criterion is an exact sign test of the
// gray samples against the threshold less the floor; stable's samples are not needed.
func TestJudgeGrayOnly(t *testing.T) {
	c := parity.Criterion{SLI: "hits", Unit: parity.Ratio, Comparison: parity.GrayAtLeast, Threshold: 0.5, Floor: 0.02}
	rep := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v + float64(i%3)/1000
		}
		return out
	}
	tests := []struct {
		name string
		gray []float64
		want parity.Verdict
		p    float64 // the p-value wanted, when not 0
	}{
		{"twenty gray samples near 0 fail", rep(0.004, 20), parity.Fail, 1.0 / (1 << 20)},
		{"twenty gray samples near 1 pass", rep(0.98, 20), parity.Pass, 1},
		{"samples within the floor below the threshold pass", rep(0.485, 20), parity.Pass, 1},
		{"half the samples below the line is no evidence", append(rep(0.1, 10), rep(0.9, 10)...), parity.Pass, 0},
		{"seven samples are too few", rep(0.004, 7), parity.NoData, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parity.StatTest{}.ForTests(8).Judge(c, nil, tt.gray)
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s (%+v), want %s", r.Verdict, r, tt.want)
			}
			if tt.p != 0 && (r.P < tt.p*0.999 || r.P > tt.p*1.001) {
				t.Errorf("p = %g, want %g", r.P, tt.p)
			}
		})
	}
}

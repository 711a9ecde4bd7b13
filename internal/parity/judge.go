package parity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// This file is the one judge: how a criterion turns a stable and a gray
// value into a row verdict, when a track is too quiet to judge, and how
// rows, alerts, query errors and the traffic guard make one verdict. The demo's report, `make parity`
// and the PoolCanary controller all call these functions; nothing else
// compares, rounds or decides.

// Criterion is how one SLI is judged: the comparison of gray against
// stable, its threshold and, for ratio limits, an effect-size floor.
type Criterion struct {
	// ID identifies the SLI (catalog.ID); SLI is its display name.
	ID  catalog.ID
	SLI string
	// Unit of the per-track values.
	Unit Unit
	// Comparison and Threshold define the test.
	Comparison Comparison
	Threshold  float64
	// Floor and RelFloor are the SLI's effect-size floor (FloorAt: the
	// larger of Floor, in Unit, and RelFloor times the baseline's level): a
	// ratio above Threshold fails only when gray - stable is also above it,
	// and the statistical tests count no difference within it. A p99 of 4
	// ms at +12% is 0.48 ms, less than a busy node jitters; a floor of 5 ms
	// keeps it a pass.
	Floor, RelFloor float64
	// Proportion marks a share of counted events (catalog.SLI.CountRule):
	// the sequential test passes it only once the pairs' event counts
	// (Pair.NStable, Pair.NGray) bound both tracks' rates within its margin.
	Proportion bool
}

// GrayOverStable returns gray/stable, with 0/0 = 1 (both tracks equal) and x/0 =
// +Inf for x > 0. Both the report and the controller form ratios here.
func GrayOverStable(gray, stable float64) float64 {
	switch {
	case stable == 0 && gray == 0:
		return 1
	case stable == 0:
		return math.Inf(1)
	}
	return gray / stable
}

// Evaluate judges stable and gray (nil: no value) against the criterion.
// Values are compared unrounded; rounding is only for printing. A ratio
// against a zero stable value is +Inf: it fails an at-most limit and the
// row's Value stays nil (JSON has no infinity) with a note saying why.
func (c Criterion) Evaluate(stable, gray *float64) Row {
	row := Row{ID: c.ID, SLI: c.SLI, Unit: c.Unit, Comparison: c.Comparison, Threshold: c.Threshold, Stable: stable, Gray: gray}
	if c.Comparison == RatioAtMost {
		row.Floor = c.Floor
		if stable != nil {
			row.Floor = c.FloorAt(*stable)
		}
	}
	switch {
	case c.Comparison == GrayAtLeast:
		if gray == nil {
			row.Verdict, row.Note = NoData, "no series for the gray track"
			return row
		}
		row.Value = ptr(*gray)
		row.Verdict = verdictOf(*gray >= c.Threshold)
		return row
	case stable == nil || gray == nil:
		row.Verdict, row.Note = NoData, missingNote(stable, gray)
		return row
	}
	if c.Comparison.IsRatio() && *stable == 0 && *gray == 0 {
		// No latency, CPU or heap at all is a broken source, not two equal tracks.
		row.Verdict, row.Note = NoData, "both tracks read 0: a ratio of zeros is no evidence"
		return row
	}
	d := *gray - *stable
	row.Delta = ptr(d)
	var v float64
	switch c.Comparison {
	case RatioAtMost, RatioAtLeast:
		v = GrayOverStable(*gray, *stable)
	default:
		v = d
	}
	if !math.IsInf(v, 0) {
		row.Value = ptr(v)
	} else {
		row.Note = "stable is 0 and gray is not: the ratio is infinite"
	}
	c.compare(&row, v, d)
	return row
}

// compare sets row's verdict: v (a ratio or a difference, as the comparison
// reads) against the threshold, a ratio's breach within the floor (d is
// gray-stable) passing with a note.
func (c Criterion) compare(row *Row, v, d float64) {
	switch c.Comparison {
	case RatioAtMost:
		breach := v > c.Threshold
		if breach && row.Floor > 0 && d <= row.Floor {
			breach = false
			row.Note = fmt.Sprintf("ratio over the limit but gray-stable %s is within the %s floor", FormatDelta(c.Unit, d), FormatValue(c.Unit, row.Floor))
		}
		row.Verdict = verdictOf(!breach)
	case RatioAtLeast, DeltaAtLeast:
		row.Verdict = verdictOf(v >= c.Threshold)
	case DeltaAtMost:
		row.Verdict = verdictOf(v <= c.Threshold)
	default:
		row.Value, row.Delta = nil, nil
		row.Verdict, row.Note = Error, fmt.Sprintf("unknown comparison %q", c.Comparison)
	}
}

func verdictOf(ok bool) Verdict {
	if ok {
		return Pass
	}
	return Fail
}

func missingNote(stable, gray *float64) string {
	switch {
	case stable == nil && gray == nil:
		return "no series for either track"
	case stable == nil:
		return "no series for the stable track"
	}
	return "no series for the gray track"
}

// Guard is the traffic guard: below MinRequestRate (requests per second,
// over the rule's window) on either track, no SLI counts, neither a pass
// nor a breach: a p99 over a handful of requests is noise.
type Guard struct {
	// RateExpr is a query returning each track's request rate (one series
	// per gray_status), e.g. job_gray_status:http_requests:rate5m{...}.
	RateExpr string
	// MinRequestRate is the rate each track must exceed, like the rules'
	// rules.minRequestRate. Zero or less disables the guard.
	MinRequestRate float64
	// Baseline is the gray_status of the track gray is compared with;
	// empty is stable's ("false").
	Baseline string
	// Window, when set, is printed with the request counts (rate times
	// window) so a count-based limit reads as a count.
	Window time.Duration
}

// Check returns "" when both tracks exceed the minimum rate, else why the
// analysis is too quiet to judge. A track without a rate is too quiet.
func (g Guard) Check(ctx context.Context, q Querier, at time.Time) (string, error) {
	if g.MinRequestRate <= 0 {
		return "", nil
	}
	tv, err := promread.ReadTracks(ctx, q, g.RateExpr, at, g.Baseline)
	if err != nil {
		return "", err
	}
	var quiet []string
	for _, tr := range []struct {
		name string
		rate *float64
	}{{"stable", tv.Stable}, {"gray", tv.Gray}} {
		rate := 0.0
		if tr.rate != nil {
			rate = *tr.rate
		}
		if rate > g.MinRequestRate {
			continue
		}
		if g.Window > 0 {
			quiet = append(quiet, fmt.Sprintf("%s track served %.0f requests in %s (minimum: more than %.0f)",
				tr.name, rate*g.Window.Seconds(), g.Window, g.MinRequestRate*g.Window.Seconds()))
		} else {
			quiet = append(quiet, fmt.Sprintf("%s track serves %.3g req/s (minimum: more than %g)", tr.name, rate, g.MinRequestRate))
		}
	}
	if len(quiet) == 0 {
		return "", nil
	}
	return "too little traffic: " + strings.Join(quiet, "; "), nil
}

// Decision is the input of Decide: everything one analysis found.
type Decision struct {
	// Rows are the judged SLIs.
	Rows []Row
	// Alerts are the poolparity alerts pending or firing (the controller
	// passes none: it judges the rules, not the alerts).
	Alerts []Alert
	// Quiet is the traffic guard's reason, "" when both tracks have
	// enough traffic.
	Quiet string
	// Errors are queries that failed.
	Errors []string
}

// Decide returns the verdict and its reasons, in this order of precedence:
//   - ERROR when a query failed: nothing read can be trusted to be whole;
//   - NO DATA when a track is too quiet: no row counts, pass or breach;
//   - FAIL when a row fails or an alert of severity critical, warning,
//     page or error (or without severity) is firing;
//   - NO DATA when a row has no data (or a row is ERROR);
//   - PASS otherwise.
//
// Pending alerts and firing info alerts are reasons, never a failure. A
// report with no rows is NO DATA, never PASS.
func Decide(d Decision) (Verdict, []string) {
	if len(d.Errors) > 0 {
		return Error, append([]string{"query failed"}, d.Errors...)
	}
	var fails, nodata, infos []string
	for _, r := range d.Rows {
		switch r.Verdict {
		case Fail:
			fails = append(fails, fmt.Sprintf("%s %s", r.SLI, describe(r)))
		case NoData, Error:
			why := r.SLI + " has no data"
			if r.Note != "" {
				why += " (" + r.Note + ")"
			}
			nodata = append(nodata, why)
		}
	}
	for _, g := range groupAlerts(d.Alerts) {
		a := g[0]
		switch {
		case AlertFails(a):
			fails = append(fails, fmt.Sprintf("alert %s is firing (%s)%s", a.Name, SeverityText(a.Severity), alertSubject(g)))
		case a.State == "firing":
			infos = append(infos, fmt.Sprintf("alert %s is firing (%s, informational)%s", a.Name, a.Severity, alertSubject(g)))
		default:
			infos = append(infos, fmt.Sprintf("alert %s is %s (%s)%s", a.Name, a.State, SeverityText(a.Severity), alertSubject(g)))
		}
	}
	switch {
	case d.Quiet != "":
		return NoData, append([]string{d.Quiet}, infos...)
	case len(fails) > 0:
		return Fail, append(append(fails, nodata...), infos...)
	case len(nodata) > 0:
		return NoData, append(nodata, infos...)
	case len(d.Rows) == 0:
		return NoData, append([]string{"no SLI was judged"}, infos...)
	}
	passed := fmt.Sprintf("%d of %d rows pass", len(d.Rows), len(d.Rows))
	return Pass, append([]string{passed}, infos...)
}

// groupAlerts groups as by name, state and severity, in the order of each
// group's first alert: one reason per group, not one per series (three pods
// of one track firing one alert are one reason).
func groupAlerts(as []Alert) [][]Alert {
	type key struct{ name, state, severity string }
	var order []key
	groups := map[key][]Alert{}
	for _, a := range as {
		k := key{a.Name, a.State, a.Severity}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], a)
	}
	out := make([][]Alert, len(order))
	for i, k := range order {
		out[i] = groups[k]
	}
	return out
}

// alertSubject names what the alerts of one group are about: the pools
// they name (their pool label), and how many series fire when more than
// one does. Empty for a single alert without a pool label.
func alertSubject(g []Alert) string {
	var pools []string
	for _, a := range g {
		if p := a.Labels["pool"]; p != "" && !contains(pools, p) {
			pools = append(pools, p)
		}
	}
	slices.Sort(pools)
	var parts []string
	switch len(pools) {
	case 0:
	case 1:
		parts = append(parts, "pool "+pools[0])
	default:
		parts = append(parts, "pools "+strings.Join(pools, ", "))
	}
	if len(g) > 1 {
		parts = append(parts, fmt.Sprintf("%d series", len(g)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

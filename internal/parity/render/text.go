package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/profdiff"
)

// RowCells are a row's printed columns.
type RowCells struct {
	SLI, Stable, Gray, Compared, Threshold, Verdict string
	// Test is the statistical verdict with its p-value and effect size.
	Test string
}

// Cells returns the row's printed columns, "-" for no data.
func Cells(r parity.Row) RowCells {
	c := RowCells{SLI: r.SLI, Stable: "-", Gray: "-", Compared: "-", Verdict: string(r.Verdict), Test: testCell(r.Test)}
	if r.Stable != nil {
		c.Stable = parity.FormatValue(r.Unit, *r.Stable)
	}
	if r.Gray != nil {
		c.Gray = parity.FormatValue(r.Unit, *r.Gray)
	}
	c.Threshold, c.Compared = comparisonCells(r)
	return c
}

// testCell is the statistical test's column: its verdict with its summary
// (or note), "-" without a test.
func testCell(t *parity.TestResult) string {
	if t == nil {
		return "-"
	}
	cell := string(t.Verdict)
	if t.Verdict == parity.Pass || t.Verdict == parity.Fail {
		cell += " (" + t.Summary() + ")"
	} else if t.Note != "" {
		cell += " (" + t.Note + ")"
	}
	return cell
}

// comparisonCells are the threshold column and the gray-vs-stable one ("-"
// without a value) of the row's comparison.
func comparisonCells(r parity.Row) (threshold, compared string) {
	compared = "-"
	switch r.Comparison {
	case parity.RatioAtMost, parity.RatioAtLeast:
		op := "<="
		if r.Comparison == parity.RatioAtLeast {
			op = ">="
		}
		threshold = fmt.Sprintf("ratio %s %.2f", op, r.Threshold)
		if r.Floor > 0 {
			threshold += " or delta <= " + parity.FormatValue(r.Unit, r.Floor)
		}
		if r.Value != nil {
			compared = "ratio " + parity.RatioText(*r.Value, r.Threshold)
		}
	case parity.DeltaAtMost:
		threshold = "delta <= " + parity.FormatDelta(r.Unit, r.Threshold)
		if r.Value != nil {
			compared = "delta " + parity.FormatDelta(r.Unit, *r.Value)
		}
	case parity.DeltaAtLeast:
		threshold = "delta >= " + parity.FormatDelta(r.Unit, r.Threshold)
		if r.Value != nil {
			compared = "delta " + parity.FormatDelta(r.Unit, *r.Value)
		}
	case parity.GrayAtLeast:
		threshold = "gray >= " + parity.FormatValue(r.Unit, r.Threshold)
		if r.Value != nil {
			compared = "gray " + parity.FormatValue(r.Unit, *r.Value)
		}
	}
	return threshold, compared
}

// Text writes the report as a plain-text table, its alerts and the final
// verdict line.
func Text(w io.Writer, r parity.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (rules window %s, at %s)\n", r.Title, r.Window, r.At.Format(time.RFC3339))
	for _, kv := range r.Context {
		fmt.Fprintf(&b, "  %s: %s\n", kv.Key, kv.Value)
	}
	if len(r.Tracks) > 0 {
		fmt.Fprintf(&b, "  tracks: %s\n", parity.TrackLine(r.Tracks))
	}
	b.WriteString("\n")
	tested := r.Statistical != ""
	if err := writeRows(&b, r.Rows, tested); err != nil {
		return err
	}
	for _, n := range r.Notes {
		if n == parity.ThresholdsNote && r.Gate == parity.GateThresholds {
			continue // the gate line above the verdict says it
		}
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	for _, n := range r.BlindSpots {
		fmt.Fprintf(&b, "  blind spot: %s\n", n)
	}
	if len(r.Pools) > 0 {
		b.WriteString("\nsync.Pool hit ratio per pool:")
		for _, p := range r.Pools {
			fmt.Fprintf(&b, " %s/%s %s", p.Track, p.Pool, parity.FormatValue(parity.Ratio, p.HitRatio))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	writeAlerts(&b, r.Alerts)
	if tested {
		writeStatistical(&b, r)
	}
	writeProfiles(&b, r.Profiles)
	writeDifferential(&b, r.Differential)
	writeRaces(&b, r.Races)
	if line := parity.GateLine(r.Gate); line != "" {
		b.WriteString("\nverdict gate: " + line + "\n")
	}
	fmt.Fprintf(&b, "\nVERDICT: %s (%s)\n", r.Verdict, strings.Join(r.Reasons, "; "))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRows writes the SLI table, with the statistical test's column when
// tested.
func writeRows(b *strings.Builder, rows []parity.Row, tested bool) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	header := "SLI\tSTABLE\tGRAY\tGRAY VS STABLE\tTHRESHOLD\tVERDICT"
	if tested {
		header += "\tSTAT TEST"
	}
	fmt.Fprintln(tw, header)
	for _, row := range rows {
		c := Cells(row)
		v := c.Verdict
		if row.Note != "" && row.Verdict != parity.Pass {
			v += " (" + row.Note + ")"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", c.SLI, c.Stable, c.Gray, c.Compared, c.Threshold, v)
		if tested {
			line += "\t" + c.Test
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// writeAlerts writes the pending and firing alerts, or that there are none.
func writeAlerts(b *strings.Builder, alerts []parity.Alert) {
	if len(alerts) == 0 {
		b.WriteString("alerts: none pending, none firing\n")
		return
	}
	b.WriteString("alerts:\n")
	for _, a := range alerts {
		fmt.Fprintf(b, "  %-7s %s [%s] since %s: %s\n", strings.ToUpper(a.State), a.Name, parity.SeverityText(a.Severity),
			a.ActiveAt.Format("15:04:05"), a.Summary)
	}
}

// writeStatistical writes the statistical test's verdict and where it and
// the thresholds disagree.
func writeStatistical(b *strings.Builder, r parity.Report) {
	fmt.Fprintf(b, "\nstatistical second opinion (Mann-Whitney U; a sign test against the threshold for a gray-only row): %s (%s)\n", r.Statistical, strings.Join(r.StatReasons, "; "))
	fmt.Fprintf(b, "thresholds confirmed by the test: %s\n", r.Confirmed)
	if len(r.Disagreements) == 0 {
		b.WriteString("thresholds and test agree on every row\n")
	}
	for _, d := range r.Disagreements {
		fmt.Fprintf(b, "  DISAGREE %s\n", d)
	}
}

// JSON writes the report as indented JSON.
func JSON(w io.Writer, r parity.Report) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		var uv *json.UnsupportedValueError
		if !errors.As(err, &uv) {
			return err
		}
		// A NaN or infinite value somewhere: written as null, the rest as it is.
		b.Reset()
		if err := enc.Encode(finiteJSON(r)); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeProfiles writes the profile comparisons: per kind, each track's
// total per request, then the functions that differ most.
func writeProfiles(b *strings.Builder, diffs []profdiff.Diff) {
	for _, d := range diffs {
		what := "CPU"
		if d.Kind == profdiff.KindAllocSpace {
			what = "allocated bytes"
		}
		span := "since start"
		if d.Seconds > 0 {
			span = fmt.Sprintf("over %ds", d.Seconds)
		}
		fmt.Fprintf(b, "\nprofiles, %s per request %s: gray %s, stable %s (%.0f and %.0f requests)\n", what, span,
			parity.FormatValue(d.Unit, d.GrayTotal), parity.FormatValue(d.Unit, d.StableTotal), d.GrayRequests, d.StableRequests)
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  GRAY - STABLE\tFUNCTION\tGRAY\tSTABLE")
		for _, row := range d.Rows {
			fn := profdiff.ShortName(row.Function)
			if row.Leaf != "" {
				fn += " (in " + profdiff.ShortName(row.Leaf) + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", parity.FormatDelta(d.Unit, row.Delta), fn,
				parity.FormatValue(d.Unit, row.Gray), parity.FormatValue(d.Unit, row.Stable))
		}
		_ = tw.Flush() // a strings.Builder does not fail
		if d.GrayFile != "" && d.StableFile != "" {
			fmt.Fprintf(b, "  go tool pprof -diff_base %s %s\n", d.StableFile, d.GrayFile)
		}
	}
}

// writeDifferential writes the differential check of responses, when one
// ran: its line, the mismatching paths with an example each, and its notes.
func writeDifferential(b *strings.Builder, d *diffcheck.Report) {
	if d == nil {
		return
	}
	against := "two stables"
	if d.OneStable {
		against = "one stable asked twice"
	}
	how := ""
	if d.Method != "" {
		how = " " + d.Method
	}
	fmt.Fprintf(b, "\ndifferential check of responses%s (noise learned from %s): %s\n", how, against, parity.DiffLine(*d))
	for _, p := range d.Paths {
		fmt.Fprintf(b, "  mismatch: %s %s (%s) in %d requests, e.g. %s: stable %s, gray %s\n",
			p.Endpoint, p.Pattern, p.Kind, p.Requests, p.Request, p.Example.A, p.Example.B)
	}
	for _, n := range d.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}

// writeRaces writes the race phase, when one ran: its line and each
// distinct race with the top frames of both stacks.
func writeRaces(b *strings.Builder, rs *parity.Races) {
	if rs == nil {
		return
	}
	fmt.Fprintf(b, "\nrace phase: %s\n", rs.Line())
	const most = 10 // report.json and report.html list them all
	for i, f := range rs.Found {
		if i == most {
			fmt.Fprintf(b, "  ... and %d more (report.json, report.html)\n", len(rs.Found)-most)
			break
		}
		times := ""
		if f.Count > 1 {
			times = fmt.Sprintf(" (%d times)", f.Count)
		}
		fmt.Fprintf(b, "  data race: %s vs %s%s\n", f.Access, f.Previous, times)
	}
	if rs.Log != "" {
		fmt.Fprintf(b, "  log: %s\n", rs.Log)
	}
}

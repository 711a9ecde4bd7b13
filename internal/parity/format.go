package parity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// FormatValue prints v in unit u: "4.21ms", "38.2KiB", "97.5%".
func FormatValue(u Unit, v float64) string {
	switch u {
	case Seconds:
		return formatSeconds(v)
	case Bytes:
		return formatBytes(v)
	case Ratio:
		return fmt.Sprintf("%.1f%%", v*100)
	case PerSec:
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// FormatDelta prints a difference in unit u with its sign; ratios are in
// percentage points ("+0.50pt").
func FormatDelta(u Unit, v float64) string {
	if u == Ratio {
		return fmt.Sprintf("%+.2fpt", v*100)
	}
	s := FormatValue(u, math.Abs(v))
	if v < 0 {
		return "-" + s
	}
	return "+" + s
}

func formatSeconds(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0s"
	case a < 1e-3:
		return fmt.Sprintf("%.0fµs", v*1e6)
	case a < 1:
		return fmt.Sprintf("%.2fms", v*1e3)
	}
	return fmt.Sprintf("%.2fs", v)
}

func formatBytes(v float64) string {
	a := math.Abs(v)
	switch {
	case a < 1024:
		return fmt.Sprintf("%.0fB", v)
	case a < 1024*1024:
		return fmt.Sprintf("%.1fKiB", v/1024)
	}
	return fmt.Sprintf("%.2fMiB", v/(1024*1024))
}

// Cells are a row's printed columns.
type Cells struct {
	SLI, Stable, Gray, Compared, Threshold, Verdict string
	// Test is the statistical verdict with its p-value and effect size.
	Test string
}

// Cells returns the row's printed columns, "-" for no data.
func (r Row) Cells() Cells {
	c := Cells{SLI: r.SLI, Stable: "-", Gray: "-", Compared: "-", Verdict: string(r.Verdict), Test: "-"}
	if t := r.Test; t != nil {
		c.Test = string(t.Verdict)
		if t.Verdict == Pass || t.Verdict == Fail {
			c.Test += fmt.Sprintf(" (p=%.2g, A=%.2f)", t.P, t.A)
		} else if t.Note != "" {
			c.Test += " (" + t.Note + ")"
		}
	}
	if r.Stable != nil {
		c.Stable = FormatValue(r.Unit, *r.Stable)
	}
	if r.Gray != nil {
		c.Gray = FormatValue(r.Unit, *r.Gray)
	}
	switch r.Comparison {
	case RatioAtMost, RatioAtLeast:
		op := "<="
		if r.Comparison == RatioAtLeast {
			op = ">="
		}
		c.Threshold = fmt.Sprintf("ratio %s %.2f", op, r.Threshold)
		if r.Floor > 0 {
			c.Threshold += " or delta <= " + FormatValue(r.Unit, r.Floor)
		}
		if r.Value != nil {
			c.Compared = "ratio " + ratioText(*r.Value, r.Threshold)
		}
	case DeltaAtMost:
		c.Threshold = "delta <= " + FormatDelta(r.Unit, r.Threshold)
		if r.Value != nil {
			c.Compared = "delta " + FormatDelta(r.Unit, *r.Value)
		}
	case DeltaAtLeast:
		c.Threshold = "delta >= " + FormatDelta(r.Unit, r.Threshold)
		if r.Value != nil {
			c.Compared = "delta " + FormatDelta(r.Unit, *r.Value)
		}
	case GrayAtLeast:
		c.Threshold = "gray >= " + FormatValue(r.Unit, r.Threshold)
		if r.Value != nil {
			c.Compared = "gray " + FormatValue(r.Unit, *r.Value)
		}
	}
	return c
}

// WriteText writes the report as a plain-text table, its alerts and the
// final verdict line.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (rules window %s, at %s)\n", r.Title, r.Window, r.At.Format(time.RFC3339))
	for _, kv := range r.Context {
		fmt.Fprintf(&b, "  %s: %s\n", kv.Key, kv.Value)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	tested := r.Statistical != ""
	header := "SLI\tSTABLE\tGRAY\tGRAY VS STABLE\tTHRESHOLD\tVERDICT"
	if tested {
		header += "\tSTAT TEST"
	}
	fmt.Fprintln(tw, header)
	for _, row := range r.Rows {
		c := row.Cells()
		v := c.Verdict
		if row.Note != "" && row.Verdict != Pass {
			v += " (" + row.Note + ")"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", c.SLI, c.Stable, c.Gray, c.Compared, c.Threshold, v)
		if tested {
			line += "\t" + c.Test
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if len(r.Pools) > 0 {
		b.WriteString("\nsync.Pool hit ratio per pool:")
		for _, p := range r.Pools {
			fmt.Fprintf(&b, " %s/%s %s", p.Track, p.Pool, FormatValue(Ratio, p.HitRatio))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	if len(r.Alerts) == 0 {
		b.WriteString("alerts: none pending, none firing\n")
	} else {
		b.WriteString("alerts:\n")
		for _, a := range r.Alerts {
			fmt.Fprintf(&b, "  %-7s %s [%s] since %s: %s\n", strings.ToUpper(a.State), a.Name, sevOrNone(a.Severity),
				a.ActiveAt.Format("15:04:05"), a.Summary)
		}
	}
	if tested {
		fmt.Fprintf(&b, "\nstatistical second opinion (Mann-Whitney U): %s (%s)\n", r.Statistical, strings.Join(r.StatReasons, "; "))
		fmt.Fprintf(&b, "thresholds confirmed by the test: %s\n", r.Confirmed)
		if len(r.Disagreements) == 0 {
			b.WriteString("thresholds and test agree on every row\n")
		}
		for _, d := range r.Disagreements {
			fmt.Fprintf(&b, "  DISAGREE %s\n", d)
		}
	}
	if r.Gate == GateConfirmed {
		b.WriteString("\nverdict gate: thresholds confirmed by the test (a threshold FAIL needs the test's FAIL)\n")
	}
	fmt.Fprintf(&b, "\nVERDICT: %s (%s)\n", r.Verdict, strings.Join(r.Reasons, "; "))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

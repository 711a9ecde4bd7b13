package render

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/profdiff"
)

// HTML writes the report as one self-contained HTML page: inline CSS and
// inline SVG charts, no script and nothing fetched from elsewhere.
func HTML(w io.Writer, r parity.Report) error {
	return pageTmpl.Execute(w, r)
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"cells":   Cells,
	"tracks":  parity.TrackLine,
	"lower":   func(v any) string { return strings.ReplaceAll(strings.ToLower(fmt.Sprint(v)), " ", "") },
	"svg":     chartSVG,
	"rfc3339": func(t time.Time) string { return t.Format(time.RFC3339) },
	"clock":   func(t time.Time) string { return t.Format("15:04:05") },
	"ratio":   func(v float64) string { return parity.FormatValue(parity.Ratio, v) },
	"sev":     parity.SeverityText,
	"persec":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"value":   parity.FormatValue,
	"delta":   parity.FormatDelta,
	"short":   profdiff.ShortName,
	"pct":     func(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) },
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}: {{.Verdict}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330; margin: 24px auto; max-width: 1040px; padding: 0 16px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 22px 0 8px; }
.meta { color: #5a6275; margin: 0 0 14px; }
.banner { padding: 10px 14px; border-radius: 6px; font-weight: 600; margin: 10px 0 14px; }
.banner.pass { background: #e3f5e8; color: #11642b; border: 1px solid #9fd8b0; }
.banner.fail { background: #fde6e6; color: #8f1414; border: 1px solid #f0a8a8; }
.banner.nodata { background: #eef0f4; color: #3d4454; border: 1px solid #c7ccd6; }
.banner small { display: block; font-weight: 400; margin-top: 2px; }
dl.ctx { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0; color: #3d4454; }
dl.ctx dt { font-weight: 600; } dl.ctx dd { margin: 0; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e6ec; }
th { background: #f5f6f9; font-weight: 600; }
td.v { font-weight: 700; }
td.pass { color: #11642b; } td.fail { color: #b01b1b; } td.nodata { color: #6b7285; }
.note { color: #6b7285; font-size: 12px; }
ul.alerts { padding-left: 18px; margin: 4px 0; }
.firing { color: #b01b1b; font-weight: 600; } .pending { color: #a35d00; font-weight: 600; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.chart { border: 1px solid #e3e6ec; border-radius: 6px; padding: 8px; }
.chart h3 { font-size: 13px; margin: 0 0 4px; }
footer { color: #8a91a3; font-size: 12px; margin-top: 20px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">Prometheus recording rules, window {{.Window}} &middot; evaluated at {{rfc3339 .At}}</p>
<div class="banner {{lower .Verdict}}">VERDICT: {{.Verdict}}<small>{{range $i, $r := .Reasons}}{{if $i}}; {{end}}{{$r}}{{end}}</small></div>
{{- if .Context}}
<dl class="ctx">{{range .Context}}<dt>{{.Key}}</dt><dd>{{.Value}}</dd>{{end}}</dl>
{{- end}}
{{- if .Tracks}}
<p class="meta">Tracks: {{tracks .Tracks}}</p>
{{- end}}
<h2>Parity per SLI</h2>
<table>
<thead><tr><th>SLI</th><th>stable</th><th>gray</th><th>gray vs stable</th><th>threshold</th><th>verdict</th>{{if .Statistical}}<th>statistical test</th>{{end}}</tr></thead>
<tbody>
{{- $tested := .Statistical}}
{{- range .Rows}}{{$c := cells .}}
<tr><td>{{$c.SLI}}{{if .Note}} <span class="note">({{.Note}})</span>{{end}}</td><td>{{$c.Stable}}</td><td>{{$c.Gray}}</td><td>{{$c.Compared}}</td><td>{{$c.Threshold}}</td><td class="v {{lower .Verdict}}">{{$c.Verdict}}</td>{{if $tested}}<td>{{$c.Test}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- if .Statistical}}
<p class="note">Statistical second opinion (one-sided Mann-Whitney U per SLI; a sign test against the threshold for a gray-only row): <b>{{.Statistical}}</b> ({{range $i, $r := .StatReasons}}{{if $i}}; {{end}}{{$r}}{{end}}){{if not .Disagreements}}; the thresholds and the test agree on every row.{{end}}</p>
{{- range .Disagreements}}
<p class="note">Disagreement: {{.}}</p>
{{- end}}
{{- end}}
{{- range .Notes}}
<p class="note">{{.}}</p>
{{- end}}
{{- range .BlindSpots}}
<p class="note"><b>Blind spot:</b> {{.}}</p>
{{- end}}
{{- if .Pools}}
<p class="note">sync.Pool hit ratio per pool: {{range $i, $p := .Pools}}{{if $i}}, {{end}}{{$p.Track}}/{{$p.Pool}} {{ratio $p.HitRatio}} ({{persec $p.GetsRate}} gets/s){{end}}</p>
{{- end}}
<h2>Alerts</h2>
{{- if .Alerts}}
<ul class="alerts">
{{- range .Alerts}}
<li><span class="{{.State}}">{{.State}}</span> <b>{{.Name}}</b> [{{sev .Severity}}] since {{clock .ActiveAt}}: {{.Summary}}</li>
{{- end}}
</ul>
{{- else}}
<p>None pending, none firing.</p>
{{- end}}
{{- range .Profiles}}
<h2>Profiles: {{if eq .Kind "cpu"}}CPU per request over {{.Seconds}}s{{else}}bytes allocated per request {{if .Seconds}}over {{.Seconds}}s{{else}}since start{{end}}{{end}}</h2>
<p class="note">gray {{value .Unit .GrayTotal}}, stable {{value .Unit .StableTotal}} ({{printf "%.0f" .GrayRequests}} and {{printf "%.0f" .StableRequests}} requests){{if .GrayFile}}; <code>go tool pprof -diff_base {{.StableFile}} {{.GrayFile}}</code>{{end}}</p>
<table>
<tr><th>gray - stable</th><th>function</th><th>gray</th><th>stable</th></tr>
{{- $u := .Unit}}
{{- range .Rows}}
<tr><td>{{delta $u .Delta}}</td><td><code>{{short .Function}}</code>{{if .Leaf}} (in <code>{{short .Leaf}}</code>){{end}}</td><td>{{value $u .Gray}}</td><td>{{value $u .Stable}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- with .Differential}}
<h2>Differential check of responses{{if .Method}} {{.Method}}{{end}}</h2>
<table>
<thead><tr><th>compared</th><th>mismatches</th><th>rate (95% Wilson)</th><th>max</th><th>outcome</th></tr></thead>
<tbody><tr><td>{{.Compared}}{{if .Skipped}} ({{.Skipped}} skipped){{end}}</td><td>{{.Mismatches}}</td><td>{{pct .Rate}} [{{pct .Low}}, {{pct .High}}]</td><td>{{pct .MaxMismatchRate}}</td><td class="v {{lower .Outcome}}">{{.Outcome}}</td></tr></tbody>
</table>
<p class="note">Noise learned from {{if .OneStable}}one stable asked twice{{else}}two stables{{end}}.</p>
{{- if .Paths}}
<table>
<tr><th>endpoint</th><th>path</th><th>kind</th><th>requests</th><th>example</th></tr>
{{- range .Paths}}
<tr><td><code>{{.Endpoint}}</code></td><td><code>{{.Pattern}}</code></td><td>{{.Kind}}</td><td>{{.Requests}}</td><td>{{.Request}}: stable <code>{{.Example.A}}</code>, gray <code>{{.Example.B}}</code></td></tr>
{{- end}}
</table>
{{- end}}
{{- range .Notes}}
<p class="note">{{.}}</p>
{{- end}}
{{- end}}
{{- with .Races}}
<h2>Race phase</h2>
<p class="note">{{.Line}}{{if .Log}}; log <code>{{.Log}}</code>{{end}}</p>
{{- if .Found}}
<table>
<tr><th>access</th><th>previous access</th><th>reports</th></tr>
{{- range .Found}}
<tr><td><code>{{.Access}}</code></td><td><code>{{.Previous}}</code></td><td>{{.Count}}</td></tr>
{{- end}}
</table>
{{- end}}
{{- end}}
{{- if .Charts}}
<h2>Per track over time</h2>
<div class="charts">
{{- range .Charts}}
<div class="chart"><h3>{{.Title}}</h3>{{svg .}}</div>
{{- end}}
</div>
{{- end}}
<footer>Generated by poolparity. Stable: unpooled baseline (gray_status="false"); gray: the candidate (gray_status="true").</footer>
</body>
</html>
`

// Track colours: stable blue, gray orange (distinguishable with the common
// colour-vision deficiencies).
var trackColour = map[string]string{"stable": "#2f6fd0", "gray": "#e07b00"}

// The chart's size and margins, in SVG units.
const (
	chartWidth, chartHeight                      = 480, 200
	chartLeft, chartRight, chartTop, chartBottom = 64, 12, 10, 38
)

// chartFrame maps a chart's times and values onto its plot area.
type chartFrame struct {
	t0         time.Time
	span, ymax float64 // seconds from t0 to the last point; the y axis' top
	pw, ph     float64 // the plot area's width and height
}

func (f chartFrame) x(t time.Time) float64 {
	return float64(chartLeft) + f.pw*t.Sub(f.t0).Seconds()/f.span
}

func (f chartFrame) y(v float64) float64 { return float64(chartTop) + f.ph*(1-v/f.ymax) }

// chartSVG draws a line chart of ch as inline SVG.
func chartSVG(ch parity.Chart) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s">`,
		chartWidth, chartHeight, template.HTMLEscapeString(ch.Title))
	f, ok := frameOf(ch)
	if !ok {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#6b7285" font-size="13">no data</text></svg>`, chartWidth/2, chartHeight/2)
		return template.HTML(b.String())
	}
	writeAxes(&b, f, ch.Unit)
	writeLines(&b, f, ch.Series)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// frameOf returns the frame of ch's points: from the first to the last
// time, and from 0 to a round value above the largest; ok is false when ch
// has no point.
func frameOf(ch parity.Chart) (f chartFrame, ok bool) {
	var t1 time.Time
	for _, s := range ch.Series {
		for _, p := range s.Points {
			if f.t0.IsZero() || p.T.Before(f.t0) {
				f.t0 = p.T
			}
			if p.T.After(t1) {
				t1 = p.T
			}
			f.ymax = math.Max(f.ymax, p.V)
		}
	}
	if f.t0.IsZero() {
		return f, false
	}
	switch {
	case ch.Unit == parity.Ratio && f.ymax <= 1:
		f.ymax = 1 // a ratio's axis is 0-100%
	case ch.Unit == parity.Bytes && f.ymax >= 1024:
		scale := math.Pow(1024, math.Floor(math.Log(f.ymax)/math.Log(1024)))
		f.ymax = niceCeil(f.ymax*1.05/scale) * scale
	default:
		f.ymax = niceCeil(f.ymax * 1.05)
	}
	f.span = t1.Sub(f.t0).Seconds()
	if f.span <= 0 {
		f.span = 1
	}
	f.pw, f.ph = float64(chartWidth-chartLeft-chartRight), float64(chartHeight-chartTop-chartBottom)
	return f, true
}

// writeAxes writes the grid with the y labels in unit, and the x labels
// (elapsed time).
func writeAxes(b *strings.Builder, f chartFrame, unit parity.Unit) {
	for i := 0; i <= 4; i++ {
		v := f.ymax * float64(i) / 4
		yy := f.y(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e6ec"/>`, chartLeft, yy, chartWidth-chartRight, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" font-size="10" fill="#5a6275">%s</text>`,
			chartLeft-4, yy+3, template.HTMLEscapeString(axisLabel(unit, v)))
	}
	for i := 0; i <= 3; i++ {
		sec := f.span * float64(i) / 3
		xx := float64(chartLeft) + f.pw*float64(i)/3
		anchor := "middle"
		if i == 3 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="%s" font-size="10" fill="#5a6275">%d:%02d</text>`,
			xx, chartHeight-chartBottom+14, anchor, int(sec)/60, int(sec)%60)
	}
}

// writeLines writes each series' line and its legend entry.
func writeLines(b *strings.Builder, f chartFrame, series []parity.Series) {
	for i, s := range series {
		col := trackColour[s.Name]
		if col == "" {
			col = "#555"
		}
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.x(p.T), f.y(p.V)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(pts, " "))
		}
		name := s.Name
		if len(s.Points) == 0 {
			name += " (no data)"
		}
		lx := chartLeft + i*120
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d" font-size="11" fill="#1d2330">%s</text>`,
			lx, chartHeight-10, col, lx+18, chartHeight-5, template.HTMLEscapeString(name))
	}
}

func axisLabel(u parity.Unit, v float64) string {
	if u == parity.Ratio {
		return fmt.Sprintf("%.0f%%", v*100)
	}
	return parity.FormatValue(u, v)
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

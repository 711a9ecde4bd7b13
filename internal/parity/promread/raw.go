package promread

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// RawSeries is one series of a raw (un-rated) counter as Prometheus stored it: its identity
// within its track (every label but the metric name, gray_status and le, sorted: the pod's), its
// le label when it is a histogram bucket, and its samples at their own times.
type RawSeries struct {
	ID, Le string
	Points []Point
}

// Raw is a counter's series per track, as RawSeries, with why a track has none.
type Raw struct {
	Stable, Gray []RawSeries
	// Why says why a track has no series, and what was left out.
	Why []string
	// Refused is true when the answer is not evidence at all (Prometheus warned it is partial).
	Refused bool
}

// ReadRaw reads every sample that Prometheus holds of the series selector selects from from to
// at: the instant query selector[at-from] at at, so that each point is a sample at its own time
// (a rule evaluation or a scrape), never an interpolation or a lookback copy. The series are told
// apart per track by gray_status (the baseline's as in ReadTracks) and, within a track, by their
// other labels. Points outside [from, at] are left out and counted in Why; the values are returned
// as stored, garbage included: the count-based judge differences them and names any it cannot
// use. An answer with warnings gives neither track series.
func ReadRaw(ctx context.Context, q Querier, selector string, from, at time.Time, baseline string) (Raw, error) {
	span := at.Sub(from).Round(time.Second)
	if span < time.Second {
		return Raw{}, fmt.Errorf("reading %s: the range from %s to %s is empty", selector, from.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	expr := fmt.Sprintf("%s[%s]", selector, model.Duration(span))
	val, warnings, _, err := q.Query(ctx, expr, at)
	if err != nil {
		return Raw{}, fmt.Errorf("querying %s: %w", expr, DescribeError(err))
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return Raw{}, fmt.Errorf("querying %s: got a %s, want a matrix", expr, typeOf(val))
	}
	var out Raw
	if w := warned(warnings); w != "" {
		out.Why, out.Refused = append(out.Why, w), true
		return out, nil
	}
	tracks := comparison(baseline)
	outside := 0
	for _, s := range m {
		var dst *[]RawSeries
		switch string(s.Metric["gray_status"]) {
		case tracks[0].status:
			dst = &out.Stable
		case tracks[1].status:
			dst = &out.Gray
		default:
			continue
		}
		rs := RawSeries{ID: seriesID(s.Metric), Le: string(s.Metric["le"])}
		for _, p := range s.Values {
			t := p.Timestamp.Time().UTC()
			if t.Before(from.Add(-time.Second)) || t.After(at.Add(time.Second)) {
				outside++
				continue
			}
			rs.Points = append(rs.Points, Point{T: t, V: float64(p.Value)})
		}
		*dst = append(*dst, rs)
	}
	if outside > 0 {
		out.Why = append(out.Why, fmt.Sprintf("%s: %d samples outside %s to %s left out", selector, outside, from.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339)))
	}
	for i, got := range [][]RawSeries{out.Stable, out.Gray} {
		if len(got) == 0 {
			out.Why = append(out.Why, fmt.Sprintf("%s track has no series of %s", tracks[i].name, selector))
		}
	}
	for _, ss := range [][]RawSeries{out.Stable, out.Gray} {
		slices.SortFunc(ss, func(a, b RawSeries) int { return strings.Compare(a.ID+"\x00"+a.Le, b.ID+"\x00"+b.Le) })
	}
	return out, nil
}

// seriesID is a series' identity within its track: its labels but the metric name, gray_status
// and le, sorted.
func seriesID(m model.Metric) string {
	names := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case model.MetricNameLabel, "gray_status", "le":
			continue
		}
		names = append(names, string(k))
	}
	slices.Sort(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, string(m[model.LabelName(k)]))
	}
	return b.String()
}

// Package promread reads what the parity evaluator needs from the
// Prometheus HTTP API: the recording rules loaded, the alerts pending or
// firing, and instant and range values told apart per track by the
// gray_status label. It decides nothing; internal/parity judges what it
// reads.
//
// # Concurrency
//
// The functions hold no state and are safe for concurrent use if the
// Querier is (client_golang's v1 API client is).
package promread

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/instrument"
)

// Querier is the part of the Prometheus HTTP API the evaluator uses;
// v1.NewAPI's result implements it. Implementations used concurrently must
// be safe for concurrent use.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
	Rules(ctx context.Context, matches []string) (v1.RulesResult, error)
}

// comparison returns the tracks read: the baseline (a gray_status value,
// "" meaning instrument.GrayStatusStable) as "stable", and the gray track.
func comparison(baseline string) [2]struct{ name, status string } {
	if baseline == "" {
		baseline = instrument.GrayStatusStable
	}
	return [2]struct{ name, status string }{{"stable", baseline}, {"gray", instrument.GrayStatusGray}}
}

// DescribeError keeps the Prometheus API's error type and detail in the
// message, and says so when the query ran out of time.
func DescribeError(err error) error {
	var perr *v1.Error
	if errors.As(err, &perr) && perr.Detail != "" {
		return fmt.Errorf("%w (%s)", err, perr.Detail)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer in time from Prometheus: %w", err)
	}
	return err
}

// LoadedRules returns the recording rules Prometheus has loaded, each with
// its group's evaluation interval (0 when Prometheus does not say).
func LoadedRules(ctx context.Context, q Querier) (map[string]time.Duration, error) {
	set, err := ReadRuleSet(ctx, q)
	if err != nil {
		return nil, err
	}
	return cloneIntervals(set), nil
}

// RuleInputs returns the metric names the loaded recording rule record
// reads (its query's vector selectors), each once, sorted; none when no
// loaded rule records it. A rule that reads a name the service does not
// expose records nothing, and these names say what is missing.
func RuleInputs(ctx context.Context, q Querier, record string) ([]string, error) {
	reads, err := ReadRuleReads(ctx, q)
	if err != nil {
		return nil, err
	}
	return reads.Records[record], nil
}

// Tracks is one SLI's value per track and why a track has none.
type Tracks struct {
	Stable, Gray *float64
	// Why says why a track has no value (no series, NaN, several series).
	Why []string
	// Refused is true when Prometheus answered with series whose values
	// were not taken (garbage, stale, ambiguous, or a partial answer): the
	// SLI is not absent, its data is bad.
	Refused bool
}

// maxSkew is how far from the evaluation time an instant answer's sample may
// be stamped: Prometheus stamps every sample of an instant query with the
// query's time, so a sample stamped elsewhere is not this query's answer.
const maxSkew = time.Minute

// ReadTracks runs the instant query expr at time at and returns one value
// per track, told apart by the gray_status label: the gray track's and the
// baseline's (a gray_status value; "" is the stable track's), returned as
// Stable. A track with no series, a NaN, infinite or negative value (every
// SLI is a rate, a ratio, a duration or a size), a sample not stamped at
// at, or more than one series has no value: several series are ambiguous
// (the selector matches more than one service), and judging their worst or
// their mix would judge something else than the user asked for. An answer
// with warnings (a partial answer) gives neither track a value.
func ReadTracks(ctx context.Context, q Querier, expr string, at time.Time, baseline string) (Tracks, error) {
	val, warnings, _, err := q.Query(ctx, expr, at)
	if err != nil {
		return Tracks{}, fmt.Errorf("querying %s: %w", expr, DescribeError(err))
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return Tracks{}, fmt.Errorf("querying %s: got a %s, want a vector", expr, typeOf(val))
	}
	var out Tracks
	if w := warned(warnings); w != "" {
		out.Why, out.Refused = append(out.Why, w), true
		return out, nil
	}
	count := map[string]int{}
	samples := map[string]*model.Sample{}
	for _, s := range vec {
		gs := string(s.Metric["gray_status"])
		count[gs]++
		samples[gs] = s
	}
	for i, tr := range comparison(baseline) {
		dst := []**float64{&out.Stable, &out.Gray}[i]
		if why := seriesCount(tr.name, count[tr.status]); why != "" {
			out.Why = append(out.Why, why)
			out.Refused = out.Refused || count[tr.status] > 1
			continue
		}
		s := samples[tr.status]
		f := float64(s.Value)
		if why := garbage(f); why != "" {
			out.Why, out.Refused = append(out.Why, fmt.Sprintf("%s track of %s %s", tr.name, expr, why)), true
			continue
		}
		if d := s.Timestamp.Time().Sub(at); d > maxSkew || d < -maxSkew {
			out.Refused = true
			out.Why = append(out.Why, fmt.Sprintf("%s track of %s is stamped %s, not at the query's time %s: not this query's answer",
				tr.name, expr, s.Timestamp.Time().UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339)))
			continue
		}
		*dst = &f
	}
	return out, nil
}

// garbage says why f is not a value of an SLI ("" when it is): NaN,
// infinite or negative.
func garbage(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Sprintf("is %v", f)
	case f < 0:
		return fmt.Sprintf("is negative (%g), which no rate, ratio, duration or size is", f)
	}
	return ""
}

// warned says that Prometheus' answer came with warnings ("" for none):
// a partial answer is not evidence.
func warned(w v1.Warnings) string {
	if len(w) == 0 {
		return ""
	}
	return "Prometheus warned that its answer may be partial: " + Sanitize(strings.Join(w, "; "), maxErrorText)
}

// typeOf names the type of an answer, "nothing" for none.
func typeOf(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}

// Samples are one SLI's samples per track over a window, with their
// times.
type Samples struct {
	Stable, Gray []Point
	// Why says why a track has no samples.
	Why []string
}

// Values returns the values of points.
func Values(points []Point) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		out[i] = p.V
	}
	return out
}

// ReadSamples runs the range query expr from start to end at step and
// returns each track's values with their times, told apart by gray_status
// (the baseline's as in ReadTracks). Only data is kept: points outside
// [start, end] are dropped; a track with a NaN, infinite or negative point,
// several series (ambiguous, as in ReadTracks), or whose newest point is
// more than two steps older than end (it stopped reporting) has no
// samples; an answer with warnings gives neither track samples. Why says
// each.
func ReadSamples(ctx context.Context, q Querier, expr string, start, end time.Time, step time.Duration, baseline string) (Samples, error) {
	val, warnings, _, err := q.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return Samples{}, fmt.Errorf("querying range %s: %w", expr, DescribeError(err))
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return Samples{}, fmt.Errorf("querying range %s: got a %s, want a matrix", expr, typeOf(val))
	}
	var out Samples
	if w := warned(warnings); w != "" {
		out.Why = append(out.Why, w)
		return out, nil
	}
	tp := collectPoints(m, start, end)
	count, samples, bad, outside := tp.count, tp.samples, tp.bad, tp.outside
	for i, tr := range comparison(baseline) {
		if why := seriesCount(tr.name, count[tr.status]); why != "" {
			out.Why = append(out.Why, why)
			continue
		}
		if n := outside[tr.status]; n > 0 {
			out.Why = append(out.Why, fmt.Sprintf("%s track of %s: %d points outside %s to %s left out", tr.name, expr, n, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
		}
		if why := bad[tr.status]; why != "" {
			out.Why = append(out.Why, fmt.Sprintf("%s track of %s has %s: its samples are not judged", tr.name, expr, why))
			continue
		}
		pts := samples[tr.status]
		if len(pts) > 0 {
			slices.SortFunc(pts, func(a, b Point) int { return a.T.Compare(b.T) })
			if last := pts[len(pts)-1].T; end.Sub(last) > 2*step {
				out.Why = append(out.Why, fmt.Sprintf("%s track of %s stopped reporting: its newest sample is from %s, %s before the end of the range",
					tr.name, expr, last.Format(time.RFC3339), end.Sub(last).Round(time.Second)))
				continue
			}
		}
		*[]*[]Point{&out.Stable, &out.Gray}[i] = pts
	}
	return out, nil
}

// trackPoints is a range answer's points per gray_status value: how many
// series, the points kept, the first garbage point (why its track has no
// samples) and how many points fell outside the range.
type trackPoints struct {
	count, outside map[string]int
	samples        map[string][]Point
	bad            map[string]string
}

// collectPoints sorts the points of m by track, keeping those within
// [start, end] that are data.
func collectPoints(m model.Matrix, start, end time.Time) trackPoints {
	tp := trackPoints{count: map[string]int{}, outside: map[string]int{}, samples: map[string][]Point{}, bad: map[string]string{}}
	for _, s := range m {
		gs := string(s.Metric["gray_status"])
		tp.count[gs]++
		seen := make(map[time.Time]bool, len(s.Values))
		for _, p := range s.Values {
			t := p.Timestamp.Time().UTC()
			if seen[t] {
				// A range answer has one point per step: a repeated one would be
				// counted as evidence twice.
				if tp.bad[gs] == "" {
					tp.bad[gs] = fmt.Sprintf("points repeated at one timestamp (%s)", t.Format(time.RFC3339))
				}
				continue
			}
			seen[t] = true
			// Prometheus stamps range points in milliseconds from the start it was sent:
			// a point within a second of the range is on its grid.
			if t.Before(start.Add(-time.Second)) || t.After(end.Add(time.Second)) {
				tp.outside[gs]++
				continue
			}
			f := float64(p.Value)
			if why := garbage(f); why != "" {
				if tp.bad[gs] == "" {
					tp.bad[gs] = fmt.Sprintf("a sample at %s %s", t.Format(time.RFC3339), why)
				}
				continue
			}
			tp.samples[gs] = append(tp.samples[gs], Point{T: t, V: f})
		}
	}
	return tp
}

// seriesCount says why a track with n series has no value: none, or
// several (ambiguous); "" for exactly one.
func seriesCount(track string, n int) string {
	switch {
	case n == 0:
		return track + " track has no series"
	case n > 1:
		return fmt.Sprintf("%s track has %d series (narrow the selector to one service)", track, n)
	}
	return ""
}

// Max runs an instant query and returns its largest finite value, or nil
// for no series. An answer with warnings is an error.
func Max(ctx context.Context, q Querier, expr string, at time.Time) (*float64, error) {
	val, warnings, _, err := q.Query(ctx, expr, at)
	if err != nil {
		return nil, fmt.Errorf("querying %q: %w", expr, DescribeError(err))
	}
	if w := warned(warnings); w != "" {
		return nil, fmt.Errorf("querying %q: %s", expr, w)
	}
	var out *float64
	keep := func(f float64) {
		if !math.IsNaN(f) && !math.IsInf(f, 0) && (out == nil || f > *out) {
			out = &f
		}
	}
	switch v := val.(type) {
	case model.Vector:
		for _, s := range v {
			keep(float64(s.Value))
		}
	case *model.Scalar:
		keep(float64(v.Value))
	}
	return out, nil
}

// Vector runs the instant query expr at time at and returns its answer, a
// vector. Another type of answer, or one with warnings (partial), is an
// error; the values are the caller's to check.
func Vector(ctx context.Context, q Querier, expr string, at time.Time) (model.Vector, error) {
	val, warnings, _, err := q.Query(ctx, expr, at)
	if err != nil {
		return nil, fmt.Errorf("querying %s: %w", expr, DescribeError(err))
	}
	if w := warned(warnings); w != "" {
		return nil, fmt.Errorf("querying %s: %s", expr, w)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("querying %s: got a %s, want a vector", expr, typeOf(val))
	}
	return vec, nil
}

// SumBy runs the instant query expr at time at and returns the sum of its
// values per value of label (a series without it under ""). A NaN,
// infinite or negative value is an error: it is no count or rate.
func SumBy(ctx context.Context, q Querier, expr, label string, at time.Time) (map[string]float64, error) {
	vec, err := Vector(ctx, q, expr, at)
	if err != nil {
		return nil, err
	}
	sums := map[string]float64{}
	for _, s := range vec {
		if why := garbage(float64(s.Value)); why != "" {
			return nil, fmt.Errorf("querying %s: a series %s", expr, why)
		}
		sums[string(s.Metric[model.LabelName(label)])] += float64(s.Value)
	}
	return sums, nil
}

// Alert is an alert that is pending or firing.
type Alert struct {
	Name     string            `json:"name"`
	State    string            `json:"state"` // "pending" or "firing"
	Severity string            `json:"severity"`
	Summary  string            `json:"summary"`
	ActiveAt time.Time         `json:"active_at"`
	Value    string            `json:"value"`
	Labels   map[string]string `json:"labels"`
}

// Alerts returns the pending and firing alerts of the rule groups whose
// name contains groupMatch, sorted by state (firing first) and name.
func Alerts(ctx context.Context, q Querier, groupMatch string) ([]Alert, error) {
	res, err := q.Rules(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the rules: %w", DescribeError(err))
	}
	out := []Alert{}
	for _, g := range res.Groups {
		if !strings.Contains(g.Name, groupMatch) {
			continue
		}
		for _, rule := range g.Rules {
			ar, ok := rule.(v1.AlertingRule)
			if !ok {
				continue
			}
			for _, a := range ar.Alerts {
				if a == nil || (a.State != v1.AlertStateFiring && a.State != v1.AlertStatePending) {
					continue
				}
				labels := make(map[string]string, len(a.Labels))
				for k, v := range a.Labels {
					labels[string(k)] = string(v)
				}
				out = append(out, Alert{
					Name: ar.Name, State: string(a.State), Severity: labels["severity"],
					Summary: string(a.Annotations["summary"]), ActiveAt: a.ActiveAt.UTC(), Value: a.Value, Labels: labels,
				})
			}
		}
	}
	slices.SortFunc(out, func(a, b Alert) int {
		if a.State != b.State {
			return strings.Compare(a.State, b.State) // "firing" < "pending"
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// PoolRatio is the hit ratio of one sync.Pool on one track.
type PoolRatio struct {
	Track    string  `json:"track"`
	Pool     string  `json:"pool"`
	HitRatio float64 `json:"hit_ratio"`
	GetsRate float64 `json:"gets_per_second"`
}

// Pools returns each pool's hit ratio (hitsExpr) and gets per second
// (getsExpr) per track, both one series per gray_status and pool, sorted by
// track and pool. A pool whose ratio is NaN, infinite or negative is left
// out.
func Pools(ctx context.Context, q Querier, hitsExpr, getsExpr string, at time.Time) ([]PoolRatio, error) {
	hits, err := Vector(ctx, q, hitsExpr, at)
	if err != nil {
		return nil, err
	}
	gets, err := Vector(ctx, q, getsExpr, at)
	if err != nil {
		return nil, err
	}
	rate := map[string]float64{}
	for _, g := range gets {
		rate[string(g.Metric["gray_status"])+"/"+string(g.Metric["pool"])] += float64(g.Value)
	}
	var out []PoolRatio
	for _, h := range hits {
		gs, pool := string(h.Metric["gray_status"]), string(h.Metric["pool"])
		if garbage(float64(h.Value)) != "" {
			continue // no ratio (a pool without gets reads NaN): not a value to report
		}
		out = append(out, PoolRatio{Track: TrackName(gs), Pool: pool, HitRatio: float64(h.Value), GetsRate: rate[gs+"/"+pool]})
	}
	slices.SortFunc(out, func(a, b PoolRatio) int { return strings.Compare(a.Track+a.Pool, b.Track+b.Pool) })
	return out, nil
}

// TrackName is the track of a gray_status value: "gray" or "stable".
func TrackName(grayStatus string) string {
	if grayStatus == instrument.GrayStatusGray {
		return "gray"
	}
	return "stable"
}

// Point is one sample of a time series.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Range runs the range query expr and returns the finite points of its
// first series (none when it has none).
func Range(ctx context.Context, q Querier, expr string, start, end time.Time, step time.Duration) ([]Point, error) {
	val, _, _, err := q.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, fmt.Errorf("querying range %q: %w", expr, DescribeError(err))
	}
	var out []Point
	if m, ok := val.(model.Matrix); ok && len(m) > 0 {
		for _, p := range m[0].Values {
			if f := float64(p.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
				out = append(out, Point{T: p.Timestamp.Time().UTC(), V: f})
			}
		}
	}
	return out, nil
}

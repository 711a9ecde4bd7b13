// Package recorded dumps the per-track series the poolparity rules read from a running
// Prometheus into compact test data, and reads them back for verdicteval's recorded corpus.
//
// A Recording holds, per track (gray_status), the service's counters the recording rules
// read (requests by code, latency buckets by le, CPU, heap allocations, GC CPU, Redis and
// sync.Pool counters), summed over the track's instances and routes exactly as the rules
// sum them (health, readiness and metrics routes left out), sampled every Step from Start.
// Replayed through the committed rules file they give the rules, the alerts and the judges
// the same inputs the live Prometheus gave them. Record is what the demo (DEMO_RECORD) and
// the kind harness call (and verdicteval's record command); Write and Read store it as gzip-compressed JSON.
//
// The functions hold no state and are safe for concurrent use if the Querier is.
package recorded

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// routeFilter leaves out the routes the rules leave out.
const routeFilter = `route!~".*(healthz|readyz|metrics).*"`

// Wanted is one recorded family: a counter summed by gray_status and By.
type Wanted struct {
	Metric string
	By     []string
	Routes bool // the rules filter the family's routes
}

// Families are the counters the recording rules read.
var Families = []Wanted{
	{Metric: "http_requests_total", By: []string{"code"}, Routes: true},
	{Metric: "http_request_duration_seconds_bucket", By: []string{"le"}, Routes: true},
	{Metric: "process_cpu_seconds_total"},
	{Metric: "go_gc_heap_allocs_bytes_total"},
	{Metric: "go_cpu_classes_gc_total_cpu_seconds_total"},
	{Metric: "go_cpu_classes_total_cpu_seconds_total"},
	{Metric: "redis_pool_hit_total"},
	{Metric: "redis_pool_miss_total"},
	{Metric: "redis_pool_timeout_total"},
	{Metric: "syncpool_gets_total", By: []string{"pool"}},
	{Metric: "syncpool_misses_total", By: []string{"pool"}},
}

// Series is one recorded counter: its labels (__name__, gray_status and the family's By
// labels) and a value per step; a step without a value is -1 (counters are never negative).
type Series struct {
	Labels map[string]string `json:"labels"`
	Values []float64         `json:"values"`
}

// Recording is one recorded run.
type Recording struct {
	// Name and Scenario say what ran (e.g. "demo-aa-1", "aa").
	Name     string `json:"name"`
	Scenario string `json:"scenario"`
	// Command is how it was recorded.
	Command string `json:"command,omitempty"`
	// Start is the time of the first value; Step the spacing.
	Start  time.Time     `json:"start"`
	Step   time.Duration `json:"step"`
	Series []Series      `json:"series"`
}

// Record reads every family of Families for both tracks (gray_status true and false, and
// baseline when present) from start to end every step.
func Record(ctx context.Context, q promread.Querier, start, end time.Time, step time.Duration) (Recording, error) {
	if step <= 0 || !end.After(start) {
		return Recording{}, fmt.Errorf("recording: empty range %s to %s every %s", start, end, step)
	}
	n := int(end.Sub(start)/step) + 1
	rec := Recording{Start: start.UTC().Truncate(time.Millisecond), Step: step}
	for _, f := range Families {
		sel := `gray_status=~"` + instrument.GrayStatusGray + "|" + instrument.GrayStatusStable + "|" + instrument.GrayStatusBaseline + `"`
		if f.Routes {
			sel += "," + routeFilter
		}
		by := append([]string{"gray_status"}, f.By...)
		expr := fmt.Sprintf("sum by (%s) (%s{%s})", strings.Join(by, ", "), f.Metric, sel)
		val, _, _, err := q.QueryRange(ctx, expr, v1.Range{Start: rec.Start, End: rec.Start.Add(time.Duration(n-1) * step), Step: step})
		if err != nil {
			return Recording{}, fmt.Errorf("recording %s: %w", f.Metric, promread.DescribeError(err))
		}
		m, ok := val.(model.Matrix)
		if !ok {
			return Recording{}, fmt.Errorf("recording %s: got a %s, want a matrix", f.Metric, val.Type())
		}
		for _, ss := range m {
			s := Series{Labels: map[string]string{"__name__": f.Metric}, Values: make([]float64, n)}
			for k, v := range ss.Metric {
				s.Labels[string(k)] = string(v)
			}
			for i := range s.Values {
				s.Values[i] = -1
			}
			for _, p := range ss.Values {
				i := int(p.Timestamp.Time().Sub(rec.Start) / step)
				if v := float64(p.Value); i >= 0 && i < n && !math.IsNaN(v) {
					s.Values[i] = v
				}
			}
			rec.Series = append(rec.Series, s)
		}
	}
	if len(rec.Series) == 0 {
		return rec, errors.New("recording: Prometheus has none of the service's series in the range")
	}
	slices.SortFunc(rec.Series, func(a, b Series) int { return strings.Compare(key(a.Labels), key(b.Labels)) })
	return rec, nil
}

func key(l map[string]string) string {
	ks := make([]string, 0, len(l))
	for k, v := range l {
		ks = append(ks, k+"="+v)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

// Write stores the recording as gzip-compressed JSON, values rounded to 7 significant digits.
func (r Recording) Write(w io.Writer) error {
	out := r
	out.Series = make([]Series, len(r.Series))
	for i, s := range r.Series {
		vs := make([]float64, len(s.Values))
		for j, v := range s.Values {
			vs[j] = round7(v)
		}
		out.Series[i] = Series{Labels: s.Labels, Values: vs}
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(zw).Encode(out); err != nil {
		return fmt.Errorf("encoding the recording: %w", err)
	}
	return zw.Close()
}

func round7(v float64) float64 {
	if v == 0 || v == -1 {
		return v
	}
	p := math.Pow(10, 6-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// WriteFile writes the recording to path (see Write).
func (r Recording) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if err := r.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// Read reads a recording written by Write.
func Read(rd io.Reader) (Recording, error) {
	zr, err := gzip.NewReader(rd)
	if err != nil {
		return Recording{}, fmt.Errorf("reading a recording: %w", err)
	}
	var r Recording
	if err := json.NewDecoder(zr).Decode(&r); err != nil {
		return Recording{}, fmt.Errorf("decoding a recording: %w", err)
	}
	if r.Step <= 0 {
		return r, fmt.Errorf("recording %q: step %s", r.Name, r.Step)
	}
	for i, s := range r.Series {
		if s.Labels["__name__"] == "" || s.Labels["gray_status"] == "" {
			return r, fmt.Errorf("recording %q: series %d has no name or gray_status", r.Name, i)
		}
	}
	return r, nil
}

// ReadFile reads the recording at path.
func ReadFile(path string) (Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return Recording{}, err
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Len is the number of steps.
func (r Recording) Len() int {
	if len(r.Series) == 0 {
		return 0
	}
	return len(r.Series[0].Values)
}

// Increments returns each series' increase from step i-1 to step i (index i, i >= 1; 0 at
// i = 0, at a missing value and at a counter reset, where the increase is the new value).
func (r Recording) Increments() [][]float64 {
	out := make([][]float64, len(r.Series))
	for k, s := range r.Series {
		inc := make([]float64, len(s.Values))
		for i := 1; i < len(s.Values); i++ {
			a, b := s.Values[i-1], s.Values[i]
			switch {
			case a < 0 || b < 0:
			case b < a:
				inc[i] = b
			default:
				inc[i] = b - a
			}
		}
		out[k] = inc
	}
	return out
}

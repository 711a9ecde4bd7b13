package parity

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
)

// Querier is the part of the Prometheus HTTP API a Checker uses;
// v1.NewAPI's result implements it.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
	Rules(ctx context.Context, matches []string) (v1.RulesResult, error)
}

// Checker reads one service's parity from Prometheus.
type Checker struct {
	q          Querier
	window     string
	selector   string
	groupMatch string
	thresholds Thresholds
	stat       *statConfig
	gate       Gate
}

// Gate says which verdict is a Report's Verdict.
type Gate string

// The gates.
const (
	// GateThresholds: the threshold rows and the firing alerts decide (the
	// default). The statistical test, if any, is shown beside them.
	GateThresholds Gate = "thresholds"
	// GateConfirmed: a threshold FAIL counts only where the statistical
	// test confirms it (Confirm); a FAIL whose test has too few samples
	// stays a FAIL, and firing alerts still fail. It needs WithStatTest.
	// docs/verdict-eval.md measures it: no false alarm on equal tracks
	// where the thresholds alone raised one in a fifth of the runs.
	GateConfirmed Gate = "confirmed"
)

// ParseGate returns the Gate named s, or an error naming the valid ones.
func ParseGate(s string) (Gate, error) {
	switch g := Gate(s); g {
	case GateThresholds, GateConfirmed:
		return g, nil
	}
	return "", fmt.Errorf("unknown gate %q: want %s or %s", s, GateThresholds, GateConfirmed)
}

// WithGate picks the verdict that decides the Report (GateThresholds
// unless told otherwise).
func WithGate(g Gate) Option { return func(c *Checker) { c.gate = g } }

type statConfig struct {
	test         StatTest
	window, step time.Duration
	family       string
}

// Option configures a Checker.
type Option func(*Checker)

// WithWindow selects the recording-rule family: "5m" (the default) or any
// other window the rules were rendered with, e.g. "1m" for the demo.
func WithWindow(w string) Option { return func(c *Checker) { c.window = w } }

// WithSelector adds label matchers (PromQL, without braces, e.g.
// `job="poolparity",namespace="shop"`) to every query, to pick one service
// when a Prometheus watches several.
func WithSelector(s string) Option { return func(c *Checker) { c.selector = strings.Trim(s, "{} ") } }

// WithThresholds replaces DefaultThresholds.
func WithThresholds(t Thresholds) Option { return func(c *Checker) { c.thresholds = t } }

// WithAlertGroups sets the substring that a rule group's name must contain
// for its alerts to count; default "poolparity".
func WithAlertGroups(substr string) Option { return func(c *Checker) { c.groupMatch = substr } }

// WithStatTest adds the statistical second opinion: each row's per-track
// rule of the family (a rules window such as "1m"; empty: the Checker's
// window) is sampled every step over the window before the check's time,
// and t judges the samples. Its verdict is shown beside the threshold
// verdict; it does not change the report's verdict.
//
// Samples of a rule whose range is longer than step overlap and are
// correlated, which the test assumes they are not: pick a short family
// and a step near its range. docs/verdict-eval.md measures the effect.
func WithStatTest(t StatTest, window, step time.Duration, family string) Option {
	return func(c *Checker) { c.stat = &statConfig{test: t, window: window, step: step, family: family} }
}

// NewChecker returns a Checker reading through q.
func NewChecker(q Querier, opts ...Option) *Checker {
	c := &Checker{q: q, window: "5m", groupMatch: "poolparity", thresholds: DefaultThresholds()}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Window returns the recording-rule window the Checker reads.
func (c *Checker) Window() string { return c.window }

// sel returns a selector with extra matchers, e.g. sel(`gray_status="true"`).
func (c *Checker) sel(extra ...string) string {
	var m []string
	if c.selector != "" {
		m = append(m, c.selector)
	}
	m = append(m, extra...)
	return "{" + strings.Join(m, ",") + "}"
}

const (
	grayM   = `gray_status="true"`
	stableM = `gray_status="false"`
)

// rowSpec is how one row is queried: a criterion and a query returning
// one series per track (labelled gray_status).
type rowSpec struct {
	Criterion
	expr string
}

func (c *Checker) specs() []rowSpec { return c.specsFor(c.window) }

// specsFor returns the rows read from the rules of window family w.
func (c *Checker) specsFor(w string) []rowSpec {
	t := c.thresholds
	rule := func(name string) string { return name + c.sel() }
	return []rowSpec{
		{Criterion{SLI: "latency p95", Unit: Seconds, Comparison: RatioAtMost, Threshold: t.LatencyRatio, Floor: t.LatencyFloor},
			rule("job_gray_status:http_request_duration_seconds:p95_rate" + w)},
		{Criterion{SLI: "latency p99", Unit: Seconds, Comparison: RatioAtMost, Threshold: t.LatencyRatio, Floor: t.LatencyFloor},
			rule("job_gray_status:http_request_duration_seconds:p99_rate" + w)},
		{Criterion{SLI: "error ratio (5xx)", Unit: Ratio, Comparison: DeltaAtMost, Threshold: t.ErrorDelta},
			rule("job_gray_status:http_request_errors:ratio_rate" + w)},
		{Criterion{SLI: "CPU per request", Unit: Seconds, Comparison: RatioAtMost, Threshold: t.CPURatio},
			rule("job_gray_status:process_cpu_seconds_per_request:ratio_rate" + w)},
		{Criterion{SLI: "heap alloc per request", Unit: Bytes, Comparison: RatioAtMost, Threshold: t.AllocRatio},
			rule("job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w)},
		{Criterion{SLI: "GC share of CPU", Unit: Ratio, Comparison: DeltaAtMost, Threshold: t.GCCPUDelta},
			rule("job_gray_status:go_gc_cpu:ratio_rate" + w)},
		{Criterion{SLI: "sync.Pool hit ratio", Unit: Ratio, Comparison: GrayAtLeast, Threshold: t.SyncPoolHitRatio},
			c.weightedHits(w)},
		{Criterion{SLI: "Redis pool hit ratio", Unit: Ratio, Comparison: DeltaAtLeast, Threshold: t.RedisHitDelta},
			rule("job_gray_status:redis_pool_hits:ratio_rate" + w)},
	}
}

// weightedHits is each track's sync.Pool hit ratio over all its pools,
// weighted by each pool's gets.
func (c *Checker) weightedHits(w string) string {
	return fmt.Sprintf("sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate%s%s * job_gray_status_pool:syncpool_gets:rate%s%s) / sum by (gray_status) (job_gray_status_pool:syncpool_gets:rate%s%s)",
		w, c.sel(), w, c.sel(), w, c.sel())
}

// trackHits is one track's weightedHits, for its chart.
func (c *Checker) trackHits(m string) string {
	w := c.window
	return fmt.Sprintf("sum(job_gray_status_pool:syncpool_hits:ratio_rate%s%s * job_gray_status_pool:syncpool_gets:rate%s%s) / sum(job_gray_status_pool:syncpool_gets:rate%s%s)",
		w, c.sel(m), w, c.sel(m), w, c.sel(m))
}

// ErrNoRules is returned by Check when Prometheus has none of the
// poolparity recording rules of the window.
var ErrNoRules = errors.New("parity: Prometheus lacks poolparity recording rules of this window")

// Check queries every row and the alerts at time at and judges them with
// Decide. When Prometheus cannot be read (an error, a timeout, the rules
// missing) the report's verdict is ERROR with the reason, and the error is
// returned too; a report is never PASS without every query answered.
func (c *Checker) Check(ctx context.Context, at time.Time) (Report, error) {
	r := Report{Title: "poolparity: gray vs stable", At: at.UTC(), Window: c.window}
	fail := func(err error) (Report, error) {
		r.Verdict, r.Reasons = Error, []string{err.Error()}
		return r, err
	}
	if c.gate == GateConfirmed && c.stat == nil {
		return fail(errors.New("parity: the confirmed gate needs the statistical test (WithStatTest)"))
	}
	if c.gate != "" && c.gate != GateThresholds && c.gate != GateConfirmed {
		return fail(fmt.Errorf("parity: unknown gate %q", c.gate))
	}
	r.Gate = c.gate
	if err := c.checkRulesLoaded(ctx); err != nil {
		return fail(err)
	}
	grayPooled, err := c.poolMode(ctx, at, grayM)
	if err != nil {
		return fail(err)
	}
	stablePooled, err := c.poolMode(ctx, at, stableM)
	if err != nil {
		return fail(err)
	}
	guard := Guard{RateExpr: "job_gray_status:http_requests:rate" + c.window + c.sel(), MinRequestRate: c.thresholds.MinRequestRate}
	quiet, err := guard.Check(ctx, c.q, at)
	if err != nil {
		return fail(fmt.Errorf("parity: %w", err))
	}
	specs := c.specs()
	statSpecs := specs
	if c.stat != nil && c.stat.family != "" {
		statSpecs = c.specsFor(c.stat.family)
	}
	for i, s := range specs {
		if s.SLI == "sync.Pool hit ratio" && !grayPooled {
			r.Notes = append(r.Notes, "sync.Pool hit ratio: not judged, the gray track is unpooled (it has no sync.Pool series)")
			continue
		}
		tv, err := ReadTracks(ctx, c.q, s.expr, at)
		if err != nil {
			return fail(fmt.Errorf("parity: %w", err))
		}
		row := s.Evaluate(tv.Stable, tv.Gray)
		if row.Verdict == NoData && len(tv.Why) > 0 {
			row.Note = strings.Join(tv.Why, "; ")
		}
		if s.SLI == "sync.Pool hit ratio" && !stablePooled {
			row.Stable = nil
			row.Note = "stable is unpooled"
		}
		if quiet != "" && row.Verdict != NoData {
			row.Verdict, row.Note = NoData, "too little traffic to judge"
		}
		if c.stat != nil && quiet == "" {
			ts, err := ReadTrackSamples(ctx, c.q, statSpecs[i].expr, at.Add(-c.stat.window), at, c.stat.step)
			if err != nil {
				return fail(fmt.Errorf("parity: %w", err))
			}
			tr := c.stat.test.ForTests(len(specs)).Judge(s.Criterion, ts.Stable, ts.Gray)
			row.Test = &tr
		}
		r.Rows = append(r.Rows, row)
	}
	if r.Pools, err = c.pools(ctx, at); err != nil {
		return fail(err)
	}
	if r.Alerts, err = c.Alerts(ctx); err != nil {
		return fail(err)
	}
	r.Verdict, r.Reasons = Decide(Decision{Rows: r.Rows, Alerts: r.Alerts, Quiet: quiet})
	if c.stat != nil {
		r.Statistical, r.StatReasons = StatVerdict(r.Rows, quiet)
		r.Disagreements = Disagreements(r.Rows)
		var reasons []string
		r.Confirmed, reasons = Decide(Decision{Rows: Confirm(r.Rows), Alerts: r.Alerts, Quiet: quiet})
		if c.gate == GateConfirmed {
			r.Verdict, r.Reasons = r.Confirmed, reasons
		}
	}
	return r, nil
}

// checkRulesLoaded fails unless Prometheus has every recording rule the
// rows read: a missing rule would otherwise look like a quiet track.
func (c *Checker) checkRulesLoaded(ctx context.Context) error {
	res, err := c.q.Rules(ctx, nil)
	if err != nil {
		return fmt.Errorf("parity: reading the rules: %w", DescribeQueryError(err))
	}
	loaded := map[string]bool{}
	for _, g := range res.Groups {
		for _, rule := range g.Rules {
			if rr, ok := rule.(v1.RecordingRule); ok {
				loaded[rr.Name] = true
			}
		}
	}
	var missing []string
	for _, name := range c.ruleNames() {
		if !loaded[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w (missing: %s)", ErrNoRules, strings.Join(missing, ", "))
	}
	return nil
}

// ruleNames are the recording rules the rows and the guard read.
func (c *Checker) ruleNames() []string {
	w := c.window
	return []string{
		"job:http_requests:min_track_rate" + w,
		"job_gray_status:http_requests:rate" + w,
		"job_gray_status:http_request_duration_seconds:p95_rate" + w,
		"job_gray_status:http_request_duration_seconds:p99_rate" + w,
		"job_gray_status:http_request_errors:ratio_rate" + w,
		"job_gray_status:process_cpu_seconds_per_request:ratio_rate" + w,
		"job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w,
		"job_gray_status:go_gc_cpu:ratio_rate" + w,
		"job_gray_status_pool:syncpool_hits:ratio_rate" + w,
		"job_gray_status_pool:syncpool_gets:rate" + w,
		"job_gray_status:redis_pool_hits:ratio_rate" + w,
	}
}

// poolMode reports whether the track exposes sync.Pool series, i.e. runs
// pooled. A track's pool_mode label is summed away by the rules, so the
// raw series are asked.
func (c *Checker) poolMode(ctx context.Context, at time.Time, m string) (bool, error) {
	q := "count(syncpool_gets_total" + c.sel(m) + ")"
	v, err := c.scalar(ctx, q, at, true)
	if err != nil {
		return false, err
	}
	return v != nil && *v > 0, nil
}

// scalar runs an instant query and returns its single value, the largest
// (or smallest) when several series match, or nil for none or NaN.
func (c *Checker) scalar(ctx context.Context, q string, at time.Time, max bool) (*float64, error) {
	val, _, _, err := c.q.Query(ctx, q, at)
	if err != nil {
		return nil, fmt.Errorf("parity: querying %q: %w", q, DescribeQueryError(err))
	}
	var out *float64
	keep := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		if out == nil || (max && f > *out) || (!max && f < *out) {
			out = ptr(f)
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

func (c *Checker) pools(ctx context.Context, at time.Time) ([]PoolRatio, error) {
	w := c.window
	q := "job_gray_status_pool:syncpool_hits:ratio_rate" + w + c.sel()
	val, _, _, err := c.q.Query(ctx, q, at)
	if err != nil {
		return nil, fmt.Errorf("parity: querying %q: %w", q, err)
	}
	gq := "job_gray_status_pool:syncpool_gets:rate" + w + c.sel()
	gets, _, _, err := c.q.Query(ctx, gq, at)
	if err != nil {
		return nil, fmt.Errorf("parity: querying %q: %w", gq, err)
	}
	rate := map[string]float64{}
	if gv, ok := gets.(model.Vector); ok {
		for _, s := range gv {
			rate[string(s.Metric["gray_status"])+"/"+string(s.Metric["pool"])] += float64(s.Value)
		}
	}
	var out []PoolRatio
	if vv, ok := val.(model.Vector); ok {
		for _, s := range vv {
			gs, pool := string(s.Metric["gray_status"]), string(s.Metric["pool"])
			out = append(out, PoolRatio{Track: trackName(gs), Pool: pool, HitRatio: float64(s.Value), GetsRate: rate[gs+"/"+pool]})
		}
	}
	slices.SortFunc(out, func(a, b PoolRatio) int {
		return strings.Compare(a.Track+a.Pool, b.Track+b.Pool)
	})
	return out, nil
}

func trackName(grayStatus string) string {
	if grayStatus == "true" {
		return "gray"
	}
	return "stable"
}

// Alerts returns the pending and firing alerts of the rule groups whose name
// contains the Checker's group match, sorted by state (firing first) and
// name.
func (c *Checker) Alerts(ctx context.Context) ([]Alert, error) {
	res, err := c.q.Rules(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("parity: reading the rules: %w", err)
	}
	out := []Alert{}
	for _, g := range res.Groups {
		if !strings.Contains(g.Name, c.groupMatch) {
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

// Charts returns the time series of p99 latency, heap bytes per request,
// sync.Pool hit ratio and request rate per track between start and end.
func (c *Checker) Charts(ctx context.Context, start, end time.Time, step time.Duration) ([]Chart, error) {
	w := c.window
	specs := []struct {
		title string
		unit  Unit
		query func(m string) string
	}{
		{"p99 latency", Seconds, func(m string) string {
			return "max(job_gray_status:http_request_duration_seconds:p99_rate" + w + c.sel(m) + ")"
		}},
		{"heap bytes allocated per request", Bytes, func(m string) string {
			return "max(job_gray_status:go_gc_heap_allocs_bytes_per_request:ratio_rate" + w + c.sel(m) + ")"
		}},
		{"sync.Pool hit ratio (gets-weighted)", Ratio, c.trackHits},
		{"requests per second", PerSec, func(m string) string {
			return "sum(job_gray_status:http_requests:rate" + w + c.sel(m) + ")"
		}},
	}
	var out []Chart
	for _, s := range specs {
		ch := Chart{Title: s.title, Unit: s.unit}
		for _, tr := range []struct{ name, m string }{{"stable", stableM}, {"gray", grayM}} {
			q := s.query(tr.m)
			val, _, _, err := c.q.QueryRange(ctx, q, v1.Range{Start: start, End: end, Step: step})
			if err != nil {
				return nil, fmt.Errorf("parity: querying range %q: %w", q, err)
			}
			ser := Series{Name: tr.name}
			if m, ok := val.(model.Matrix); ok && len(m) > 0 {
				for _, p := range m[0].Values {
					if f := float64(p.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
						ser.Points = append(ser.Points, Point{T: p.Timestamp.Time().UTC(), V: f})
					}
				}
			}
			ch.Series = append(ch.Series, ser)
		}
		out = append(out, ch)
	}
	return out, nil
}

func ptr(f float64) *float64 { return &f }

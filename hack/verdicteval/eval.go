package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

// config is one evaluation.
type config struct {
	AARuns, Runs int
	Seed         uint64
	RulesFile    string
	// Scrape is the scrape interval of the synthetic series; Eval the rule evaluation interval.
	Scrape, Eval time.Duration
	// Length of a run; Start of the injected regression; Window of one analysis.
	Length, Start, Window time.Duration
	// RPS per track; MedianLatency and P99Latency of the base latency distribution (log-normal).
	RPS                       float64
	MedianLatency, P99Latency float64
	// BaseErrors is the 5xx ratio of both tracks.
	BaseErrors float64
	// Drift is the sigma of a track's per-scrape latency scale (CPU contention); StallProb the
	// chance per scrape and track of a stall that slows StallShare of its requests StallFactor
	// times (a GC pause, a noisy neighbour).
	Drift, StallProb, StallShare, StallFactor float64
	// Stat is the statistical test; StatFamily, StatStep and StatWindow where its samples
	// come from.
	Stat                 parity.StatTest
	StatFamily           string
	StatStep, StatWindow time.Duration
}

func defaultConfig() config {
	st := catalog.Default().Stat
	return config{
		AARuns: 50, Runs: 20, Seed: 1,
		RulesFile: "deploy/prometheus/poolparity.rules.yml",
		Scrape:    15 * time.Second, Eval: 30 * time.Second,
		Length: 40 * time.Minute, Start: 10 * time.Minute, Window: 5 * time.Minute,
		RPS: 20, MedianLatency: 0.020, P99Latency: 0.060,
		BaseErrors: 0.001,
		Drift:      0.05, StallProb: 0.01, StallShare: 0.3, StallFactor: 3,
		// The catalog's defaults: samples of the 1m rules every minute do not overlap; ten
		// minutes give 11 per track.
		Stat: parity.DefaultStatTest(), StatFamily: st.SampleFamily, StatStep: st.Step, StatWindow: st.Window,
	}
}

// scenario is an injected difference of the gray track from Start on.
type scenario struct {
	Name    string
	Latency float64 // gray latency multiplied by 1 + Latency
	Errors  float64 // added to gray's 5xx ratio
}

func (s scenario) aa() bool { return s.Latency == 0 && s.Errors == 0 }

var scenarios = []scenario{
	{Name: "A/A (no difference)"},
	{Name: "p99 +5%", Latency: 0.05},
	{Name: "p99 +10%", Latency: 0.10},
	{Name: "p99 +20%", Latency: 0.20},
	{Name: "p99 +40%", Latency: 0.40},
	{Name: "errors +0.5 points", Errors: 0.005},
}

// window is one analysis of the judge.
type window struct {
	At                                time.Duration // since the run's start
	Threshold, Statistical, Confirmed parity.Verdict
	Disagreements                     []string
	Failing                           []string // the rows the thresholds failed
	StatFailing                       []string // the rows the statistical test failed
	Firing                            []string // the critical or warning alerts firing at At
}

// runResult is one run.
type runResult struct {
	Scenario scenario
	Run      int
	// FirstFiring is when each critical or warning alert first fired (since the run's start).
	FirstFiring map[string]time.Duration
	Windows     []window
}

// results are every run of every scenario, in order.
type results struct {
	Runs    []runResult
	Elapsed time.Duration
}

func evaluate(ctx context.Context, cfg config, progress io.Writer) (results, error) {
	start := time.Now()
	var res results
	for si, sc := range scenarios {
		n := cfg.Runs
		if sc.aa() {
			n = cfg.AARuns
		}
		for i := range n {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(si*1000+i)))
			rr, err := oneRun(ctx, cfg, sc, i, rng)
			if err != nil {
				return res, fmt.Errorf("%s run %d: %w", sc.Name, i, err)
			}
			res.Runs = append(res.Runs, rr)
		}
		fmt.Fprintf(progress, "verdicteval: %s: %d runs (%s so far)\n", sc.Name, n, time.Since(start).Round(time.Second))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// track is one synthetic track's cumulative counters.
type track struct {
	gray                                     bool
	requests, errors                         float64
	buckets                                  []float64 // cumulative per le, le = leBounds
	cpu, heap, gcCPU, totalCPU, hits, misses float64
}

// leBounds are the service's classic buckets (internal/server.DurationBuckets) and +Inf.
var leBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, math.Inf(1)}

// scrape advances a track by one scrape interval.
func (t *track) scrape(cfg config, sc scenario, regress bool, rng *rand.Rand) {
	mean := cfg.RPS * cfg.Scrape.Seconds()
	n := int(math.Max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	sigma := math.Log(cfg.P99Latency/cfg.MedianLatency) / 2.3263478740408408
	scale := math.Exp(cfg.Drift * rng.NormFloat64())
	stall := rng.Float64() < cfg.StallProb
	errRate := cfg.BaseErrors
	if t.gray && regress {
		scale *= 1 + sc.Latency
		errRate += sc.Errors
	}
	for range n {
		lat := cfg.MedianLatency * math.Exp(sigma*rng.NormFloat64()) * scale
		if stall && rng.Float64() < cfg.StallShare {
			lat *= cfg.StallFactor
		}
		for i, le := range leBounds {
			if lat <= le {
				t.buckets[i]++
			}
		}
		if rng.Float64() < errRate {
			t.errors++
		}
	}
	t.requests += float64(n)
	fn := float64(n)
	t.cpu += fn * 0.0005 * math.Exp(0.05*rng.NormFloat64())
	t.heap += fn * 50000 * math.Exp(0.02*rng.NormFloat64())
	total := cfg.Scrape.Seconds() * 0.2 * math.Exp(0.05*rng.NormFloat64())
	t.totalCPU += total
	t.gcCPU += total * 0.02 * math.Exp(0.1*rng.NormFloat64())
	t.hits += fn * 0.999
	t.misses += fn * 0.001
}

// series writes the track's series at one scrape: name{labels} -> value.
func (t *track) series(out map[string]float64) {
	gs, inst := "false", "10.0.0.1:8080"
	if t.gray {
		gs, inst = "true", "10.0.0.2:8080"
	}
	base := fmt.Sprintf(`job="poolparity",instance=%q,gray_status=%q,pool_mode="unpooled"`, inst, gs)
	http := base + `,method="GET",route="/api/v1/items/{id}"`
	add := func(k string, v float64) { out[k] = v }
	add(`http_requests_total{`+http+`,code="200"}`, t.requests-t.errors)
	add(`http_requests_total{`+http+`,code="500"}`, t.errors)
	for i, le := range leBounds {
		s := "+Inf"
		if !math.IsInf(le, 1) {
			s = fmt.Sprint(le)
		}
		add(fmt.Sprintf(`http_request_duration_seconds_bucket{%s,le=%q}`, http, s), t.buckets[i])
	}
	add(`process_cpu_seconds_total{`+base+`}`, t.cpu)
	add(`go_gc_heap_allocs_bytes_total{`+base+`}`, t.heap)
	add(`go_cpu_classes_gc_total_cpu_seconds_total{`+base+`}`, t.gcCPU)
	add(`go_cpu_classes_total_cpu_seconds_total{`+base+`}`, t.totalCPU)
	add(`redis_pool_hit_total{`+base+`}`, t.hits)
	add(`redis_pool_miss_total{`+base+`}`, t.misses)
}

// load appends the run's scrapes of both tracks to st, from t0 on.
func load(st *memStore, cfg config, sc scenario, rng *rand.Rand, t0 time.Time) error {
	stable := &track{buckets: make([]float64, len(leBounds))}
	gray := &track{gray: true, buckets: make([]float64, len(leBounds))}
	parsed := map[string]labels.Labels{}
	for at := time.Duration(0); at <= cfg.Length; at += cfg.Scrape {
		if at > 0 {
			regress := at > cfg.Start
			stable.scrape(cfg, sc, regress, rng)
			gray.scrape(cfg, sc, regress, rng)
		}
		vals := map[string]float64{}
		stable.series(vals)
		gray.series(vals)
		for k, v := range vals {
			l, ok := parsed[k]
			if !ok {
				var err error
				if l, err = parser.NewParser(parser.Options{}).ParseMetric(k); err != nil {
					return fmt.Errorf("series %s: %w", k, err)
				}
				parsed[k] = l
			}
			st.append(l, t0.Add(at).UnixMilli(), v)
		}
	}
	return nil
}

// replay loads one run of sc and steps the rule engine through it every cfg.Eval, calling
// visit at each step with the run's time, a querier that reads no sample after it, and the
// alerts firing then (name to severity).
func replay(ctx context.Context, cfg config, sc scenario, rng *rand.Rand, visit func(at time.Duration, ts time.Time, q parity.Querier, firing map[string]string) error) error {
	t0 := time.Unix(0, 0).UTC()
	st := newMemStore()
	if err := load(st, cfg, sc, rng, t0); err != nil {
		return err
	}
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true,
	})
	defer engine.Close()
	ev, err := newRuleEvaluator(cfg.RulesFile, engine, st)
	if err != nil {
		return err
	}
	q := &engineQuerier{engine: engine, storage: st, records: ev.records}
	for at := time.Duration(0); at <= cfg.Length; at += cfg.Eval {
		// The store holds the whole run, but a query at ts reads no sample after ts.
		firing, err := ev.eval(ctx, t0, at)
		if err != nil {
			return err
		}
		if err := visit(at, t0.Add(at), q, firing); err != nil {
			return err
		}
	}
	return nil
}

// oneRun replays one run through the engine and the rules and judges it.
func oneRun(ctx context.Context, cfg config, sc scenario, i int, rng *rand.Rand) (runResult, error) {
	rr := runResult{Scenario: sc, Run: i, FirstFiring: map[string]time.Duration{}}
	cat := catalog.Default()
	opts := parity.Options{
		Window: "5m", Selector: `job="poolparity"`, Alerts: true,
		Stat: parity.StatReport, Test: cfg.Stat, StatWindow: cfg.StatWindow, StatStep: cfg.StatStep, SampleFamily: cfg.StatFamily,
	}
	err := replay(ctx, cfg, sc, rng, func(at time.Duration, ts time.Time, q parity.Querier, firing map[string]string) error {
		for name, sev := range firing {
			if _, seen := rr.FirstFiring[name]; !seen && (sev == "critical" || sev == "warning") {
				rr.FirstFiring[name] = at
			}
		}
		if at < cfg.Start+cfg.Window || (at-cfg.Start)%cfg.Window != 0 {
			return nil
		}
		opts.At = ts
		r, err := parity.Evaluate(ctx, q, cat, opts)
		if err != nil {
			return fmt.Errorf("judging at %s: %w", at, err)
		}
		w := window{At: at, Threshold: r.Verdict, Statistical: r.Statistical, Confirmed: r.Confirmed, Disagreements: r.Disagreements}
		for name, sev := range firing {
			if sev == "critical" || sev == "warning" {
				w.Firing = append(w.Firing, name)
			}
		}
		slices.Sort(w.Firing)
		for _, row := range r.Rows {
			if row.Verdict == parity.Fail {
				w.Failing = append(w.Failing, row.SLI)
			}
			if row.Test != nil && row.Test.Verdict == parity.Fail {
				w.StatFailing = append(w.StatFailing, fmt.Sprintf("%s p=%.2g A=%.2f", row.SLI, row.Test.P, row.Test.A))
			}
		}
		rr.Windows = append(rr.Windows, w)
		return nil
	})
	return rr, err
}

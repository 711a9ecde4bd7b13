package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/poolparity/poolparity/hack/verdicteval/countsim"
	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
)

// config is one evaluation; every field with a flag is set in main.go.
type config struct {
	AARuns, Runs int
	Seed         uint64
	RulesFile    string
	// Scrape is the scrape interval of the synthetic series; Eval the rule evaluation interval
	// (the alerts' looks).
	Scrape, Eval time.Duration
	// Lead is how long stable runs alone before the rollout starts (the gray track appears
	// then); Rollout how long the rollout lasts, the judges looking every Look.
	Lead, Rollout, Look time.Duration
	// Warmup is the per-pod warm-up the judges exclude after the gray starts: by default the
	// controller's (catalog.DefaultWarmup), widened by parity as the controller's is, by each
	// sample's range and the rule evaluation interval Eval.
	Warmup time.Duration
	// RPS per track; MedianLatency and P99Latency of the base latency distribution (log-normal).
	RPS                       float64
	MedianLatency, P99Latency float64
	// BaseErrors is the 5xx ratio of both tracks.
	BaseErrors float64
	// Drift is the sigma of a track's log latency scale, an AR(1) process whose
	// minute-to-minute correlation is AR1 (0: independent per scrape); PodOffset the sigma of a
	// lasting log offset of each of a track's Pods (drawn once per run); StallProb the chance
	// per scrape and track of a stall that slows StallShare of its requests StallFactor times.
	Drift, AR1, PodOffset              float64
	Pods                               int
	StallProb, StallShare, StallFactor float64
	// Cold is how much slower (and costlier in CPU, half as much) the gray is at its start,
	// decaying linearly to nothing over ColdFor: the cold first step.
	Cold    float64
	ColdFor time.Duration
	// Stat is the Mann-Whitney test; StatFamily, StatStep and StatWindow where its samples
	// come from. Seq is the sequential test.
	Stat                 parity.StatTest
	Seq                  parity.SequentialTest
	StatFamily           string
	StatStep, StatWindow time.Duration
	// RecordedDir holds the recorded corpus (empty: none); RecordedRuns is how many A/A runs
	// are built from it (and Runs per recorded regression).
	RecordedDir  string
	RecordedRuns int
	// OracleRuns and OracleNullRuns are the countsim runs of the synthetic corpus' oracle
	// (oracleOf) per latency regression and at the floor.
	OracleRuns, OracleNullRuns int
}

// defaultConfig is the evaluation of docs/verdict-eval.md. Its A/A scenarios run 400 times, as
// the count evaluation's cells do (countsim.DefaultConfig): the false FAIL target asks for a rate
// of at most 1% whose 95% upper bound is under 2%, and at 200 runs a single false FAIL (0.5%
// [0.1, 2.8]) cannot be told from a rate over 1%, nor none at all be sure of it (upper 1.9%);
// at 400 one FAIL is 0.25% [0.04, 1.4].
func defaultConfig() config {
	st := catalog.Default().Stat
	return config{
		AARuns: 400, Runs: 40, Seed: 1, RecordedRuns: 400,
		RulesFile: "deploy/prometheus/poolparity.rules.yml",
		Scrape:    15 * time.Second, Eval: 30 * time.Second,
		Lead: 5 * time.Minute, Rollout: 20 * time.Minute, Look: time.Minute, Warmup: st.Warmup,
		RPS: 20, MedianLatency: 0.020, P99Latency: 0.060,
		BaseErrors: 0.001,
		Drift:      0.05, AR1: 0.5, PodOffset: 0.02, Pods: 2,
		StallProb: 0.01, StallShare: 0.3, StallFactor: 3,
		Cold: 0.3, ColdFor: 3 * time.Minute,
		// The catalog's defaults: samples of the 1m rules every minute do not overlap.
		Stat: parity.DefaultStatTest(), StatFamily: st.SampleFamily, StatStep: st.Step, StatWindow: st.Window,
		RecordedDir: "hack/verdicteval/testdata/recorded",
		// countsim's own: 100 per regression, 400 at the floor.
		OracleRuns: countsim.DefaultConfig().RegressionRuns, OracleNullRuns: countsim.DefaultConfig().Runs,
	}
}

// scenario is an injected difference of the gray track, present from its start.
type scenario struct {
	Name    string
	Latency float64 // gray latency multiplied by 1 + Latency
	Tail    float64 // the slowest 2% of gray requests multiplied by 1 + Tail
	Errors  float64 // added to gray's 5xx ratio
	Cold    bool    // the gray starts cold (config Cold, ColdFor)
	// Recording is the group of recordings the scenario is built from (recorded corpus).
	Recording string
}

func (s scenario) aa() bool { return s.Latency == 0 && s.Tail == 0 && s.Errors == 0 && !s.regressed() }

// atOrBeyondMargin reports whether a synthetic scenario's gray is at or beyond the margin of an
// SLI of the catalog: p99 +20% or more (threshold x1.1), the slowest 2% twice as slow (p99 about
// doubled), or 0.5 points more 5xx (the margin of the error ratio).
func (s scenario) atOrBeyondMargin() bool { return s.Latency >= 0.2 || s.Tail > 0 || s.Errors >= 0.005 }

// regressed reports whether a recorded scenario's recordings have a regression.
func (s scenario) regressed() bool { return s.Recording != "" && !isAA(s.Recording) }

var synthetic = []scenario{
	{Name: "A/A"},
	{Name: "A/A, cold first 3 minutes", Cold: true},
	{Name: "p99 +5%", Latency: 0.05},
	{Name: "p99 +10%", Latency: 0.10},
	{Name: "p99 +20%", Latency: 0.20},
	{Name: "p99 +40%", Latency: 0.40},
	{Name: "tail only: slowest 2% +100%", Tail: 1},
	{Name: "errors +0.5 points", Errors: 0.005},
}

// judge is one way of deciding a look.
type judge struct {
	Name string
	// Seq: the sequential mode; Counts: the count-based test (Counts, the PoolCanary's
	// default); else Confirm (which gives the thresholds too). Warm excludes the warm-up;
	// Thresholds takes the rows' verdict.
	Seq, Counts, Warm, Thresholds bool
	// ColdOnly: run only in the cold scenarios (the judges without the warm-up exclusion).
	ColdOnly bool
}

// judges are in the order they run: the thresholds reuse the confirmed judge's call, whose
// rows are the thresholds'.
var judges = []judge{
	{Name: "confirmed (Mann-Whitney), warm-up excluded", Warm: true},
	{Name: "thresholds", Thresholds: true, Warm: true},
	{Name: "sequential, warm-up excluded", Seq: true, Warm: true},
	{Name: "counts, warm-up excluded", Counts: true, Warm: true},
	{Name: "confirmed (Mann-Whitney), no warm-up", ColdOnly: true},
	{Name: "sequential, no warm-up", Seq: true, ColdOnly: true},
}

const alertJudge = "alert rules"

// look is one analysis of one judge.
type look struct {
	At      time.Duration // since the rollout's start
	Verdict parity.Verdict
	Why     string // the failing rows or SLIs
}

// runResult is one run.
type runResult struct {
	Scenario scenario
	Run      int
	// FirstFiring is when each SLI alert first fired (since the rollout's start; negative
	// before it).
	FirstFiring map[string]time.Duration
	// Looks per judge name.
	Looks map[string][]look
}

// results are every run of every scenario of both corpora, in order.
type results struct {
	Synthetic, Recorded []runResult
	Recordings          []recordingInfo
	Elapsed             time.Duration
	SyntheticTime       time.Duration
	// Groups are the rule groups every run evaluates, with their intervals.
	Groups []ruleGroup
	// Oracle is the synthetic corpus' oracle (oracleOf), simulated in OracleTime.
	Oracle     corpusOracle
	OracleTime time.Duration
}

func evaluate(ctx context.Context, cfg config, progress io.Writer) (results, error) {
	start := time.Now()
	var res results
	ev, err := newRuleEvaluator(cfg.RulesFile, cfg.Eval, nil, nil)
	if err != nil {
		return res, err
	}
	res.Groups = ev.groups
	// runs runs every run of sc (the A/A runs' count when it is A/A), its noise seeded by seed,
	// the scenario's index si and the run's.
	runs := func(corpus string, si int, sc scenario, aaRuns int, seed uint64, src func(*rand.Rand) (source, error)) ([]runResult, error) {
		n := cfg.Runs
		if sc.aa() {
			n = aaRuns
		}
		out, err := parallel(ctx, n, func(i int) (runResult, error) {
			s, err := src(rand.New(rand.NewPCG(seed, uint64(si*1000+i))))
			if err != nil {
				return runResult{}, err
			}
			rr, err := oneRun(ctx, cfg, sc, i, s)
			if err != nil {
				return rr, fmt.Errorf("%s %s run %d: %w", corpus, sc.Name, i, err)
			}
			return rr, nil
		})
		fmt.Fprintf(progress, "verdicteval: %s %s: %d runs (%s so far)\n", corpus, sc.Name, n, time.Since(start).Round(time.Second))
		return out, err
	}
	for si, sc := range synthetic {
		rs, err := runs("synthetic", si, sc, cfg.AARuns, cfg.Seed, func(rng *rand.Rand) (source, error) { return newSynthSource(cfg, sc, rng), nil })
		if err != nil {
			return res, err
		}
		res.Synthetic = append(res.Synthetic, rs...)
	}
	res.SyntheticTime = time.Since(start)
	ostart := time.Now()
	if res.Oracle, err = oracleOf(ctx, cfg); err != nil {
		return res, err
	}
	res.OracleTime = time.Since(ostart)
	fmt.Fprintf(progress, "verdicteval: the synthetic corpus' oracle: %d + %d runs of countsim (%s so far)\n", res.Oracle.Runs*len(res.Oracle.ByLatency), res.Oracle.NullRuns, time.Since(start).Round(time.Second))
	if cfg.RecordedDir != "" {
		corpus, err := loadCorpus(cfg.RecordedDir)
		if err != nil {
			return res, err
		}
		res.Recordings = corpus.info()
		for si, sc := range corpus.scenarios() {
			rs, err := runs("recorded", si, sc, cfg.RecordedRuns, cfg.Seed+1, func(rng *rand.Rand) (source, error) { return corpus.source(cfg, sc, rng) })
			if err != nil {
				return res, err
			}
			res.Recorded = append(res.Recorded, rs...)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// parallel runs f for 0..n-1 on GOMAXPROCS workers and returns the results in order. Each run
// seeds its own noise from its index, so the results do not depend on the scheduling.
func parallel(ctx context.Context, n int, f func(i int) (runResult, error)) ([]runResult, error) {
	out := make([]runResult, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = f(i)
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, errors.Join(errs...)
}

// source produces a run's scrapes: at each scrape time, every series' cumulative value.
type source interface {
	// scrape advances by one scrape interval to at (since the run's start) and writes the
	// series present then into out.
	scrape(at time.Duration, out map[string]float64)
	// interval is the scrape interval.
	interval() time.Duration
}

// track is one synthetic track's cumulative counters.
type track struct {
	gray                                     bool
	requests, errors                         float64
	buckets                                  []float64 // cumulative per le, le = leBounds
	cpu, heap, gcCPU, totalCPU, hits, misses float64
	ar                                       float64   // the AR(1) state of the log latency scale
	pods                                     []float64 // lasting log offsets of the pods
}

// leBounds are the service's classic buckets (internal/server.DurationBuckets) and +Inf.
var leBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, math.Inf(1)}

// synthSource is the synthetic corpus: a stable track from the start and a gray track from
// Lead on.
type synthSource struct {
	cfg            config
	sc             scenario
	rng            *rand.Rand
	stable, gray   *track
	phi, innovSD   float64 // the per-scrape AR(1) coefficient and innovation sigma
	sigma, tailCut float64
}

func newSynthSource(cfg config, sc scenario, rng *rand.Rand) *synthSource {
	s := &synthSource{cfg: cfg, sc: sc, rng: rng}
	// The minute-to-minute correlation AR1 is phi^(scrapes per minute).
	per := time.Minute.Seconds() / cfg.Scrape.Seconds()
	if cfg.AR1 > 0 {
		s.phi = math.Pow(cfg.AR1, 1/per)
	}
	s.innovSD = math.Sqrt(1 - s.phi*s.phi)
	s.sigma = math.Log(cfg.P99Latency/cfg.MedianLatency) / 2.3263478740408408
	s.tailCut = cfg.MedianLatency * math.Exp(s.sigma*2.0537489) // the 98th percentile
	newTrack := func(gray bool) *track {
		t := &track{gray: gray, buckets: make([]float64, len(leBounds)), ar: rng.NormFloat64(), pods: make([]float64, max(cfg.Pods, 1))}
		for i := range t.pods {
			t.pods[i] = cfg.PodOffset * rng.NormFloat64()
		}
		return t
	}
	s.stable, s.gray = newTrack(false), newTrack(true)
	return s
}

func (s *synthSource) interval() time.Duration { return s.cfg.Scrape }

func (s *synthSource) scrape(at time.Duration, out map[string]float64) {
	if at > 0 {
		s.advance(s.stable, at)
		if at > s.cfg.Lead {
			s.advance(s.gray, at)
		}
	}
	s.stable.series(out)
	if at >= s.cfg.Lead {
		s.gray.series(out)
	}
}

// advance adds one scrape interval of requests to t.
func (s *synthSource) advance(t *track, at time.Duration) {
	cfg, rng, sc := s.cfg, s.rng, s.sc
	mean := cfg.RPS * cfg.Scrape.Seconds()
	n := int(math.Max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	t.ar = s.phi*t.ar + s.innovSD*rng.NormFloat64()
	scale := math.Exp(cfg.Drift * t.ar)
	stall := rng.Float64() < cfg.StallProb
	errRate, cpuScale := cfg.BaseErrors, 1.0
	tail := 1.0
	if t.gray {
		scale *= 1 + sc.Latency
		tail += sc.Tail
		errRate += sc.Errors
		if since := at - cfg.Lead; sc.Cold && since < cfg.ColdFor {
			c := cfg.Cold * (1 - float64(since)/float64(cfg.ColdFor))
			scale *= 1 + c
			cpuScale *= 1 + c/2
		}
	}
	var podCPU float64
	for range n {
		pod := t.pods[rng.IntN(len(t.pods))]
		podCPU += pod
		base := cfg.MedianLatency * math.Exp(s.sigma*rng.NormFloat64())
		lat := base * scale * math.Exp(pod)
		if base > s.tailCut {
			lat *= tail
		}
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
	if n > 0 {
		cpuScale *= math.Exp(podCPU / fn)
	}
	t.cpu += fn * 0.0005 * cpuScale * math.Exp(0.05*rng.NormFloat64())
	t.heap += fn * 50000 * math.Exp(0.02*rng.NormFloat64())
	total := cfg.Scrape.Seconds() * 0.2 * math.Exp(0.05*rng.NormFloat64())
	t.totalCPU += total
	t.gcCPU += total * 0.02 * math.Exp(0.1*rng.NormFloat64())
	t.hits += fn * 0.999
	t.misses += fn * 0.001
}

// series writes the track's series at one scrape: name{labels} -> value.
func (t *track) series(out map[string]float64) {
	gs, inst := instrument.GrayStatusStable, "10.0.0.1:8080"
	if t.gray {
		gs, inst = instrument.GrayStatusGray, "10.0.0.2:8080"
	}
	base := fmt.Sprintf(`job="poolparity",instance=%q,gray_status=%q,pool_mode="unpooled"`, inst, gs)
	http := base + `,method="GET",route="/api/v1/items/{id}"`
	add := func(k string, v float64) { out[k] = v }
	add(`http_requests_total{`+http+`,code="200"}`, t.requests-t.errors)
	add(`http_requests_total{`+http+`,code="500"}`, t.errors)
	for i, le := range leBounds {
		add(fmt.Sprintf(`http_request_duration_seconds_bucket{%s,le=%q}`, http, leText(le)), t.buckets[i])
	}
	add(`process_cpu_seconds_total{`+base+`}`, t.cpu)
	add(`go_gc_heap_allocs_bytes_total{`+base+`}`, t.heap)
	add(`go_cpu_classes_gc_total_cpu_seconds_total{`+base+`}`, t.gcCPU)
	add(`go_cpu_classes_total_cpu_seconds_total{`+base+`}`, t.totalCPU)
	add(`redis_pool_hit_total{`+base+`}`, t.hits)
	add(`redis_pool_miss_total{`+base+`}`, t.misses)
}

func leText(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return fmt.Sprint(le)
}

// load appends the run's scrapes to st, from t0 on.
func load(st *memStore, cfg config, src source, t0 time.Time) error {
	parsed := map[string]labels.Labels{}
	length := cfg.Lead + cfg.Rollout
	for at := time.Duration(0); at <= length; at += src.interval() {
		vals := map[string]float64{}
		src.scrape(at, vals)
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

// replay loads one run from src and steps the rule engine through it, each rule group at its
// interval (cfg.Eval where the group gives none), calling visit at every multiple of the
// intervals' greatest common divisor with the run's time, a querier that reads no sample after
// it, and the alerts found firing then (name to severity; empty where no alert group was due).
func replay(ctx context.Context, cfg config, src source, visit func(at time.Duration, ts time.Time, q parity.Querier, firing map[string]string) error) error {
	t0 := time.Unix(0, 0).UTC()
	st := newMemStore()
	if err := load(st, cfg, src, t0); err != nil {
		return err
	}
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
		EnableAtModifier: true, EnableNegativeOffset: true,
	})
	defer engine.Close()
	ev, err := newRuleEvaluator(cfg.RulesFile, cfg.Eval, engine, st)
	if err != nil {
		return err
	}
	q := &engineQuerier{engine: engine, storage: st, groups: ev.groups}
	for at := time.Duration(0); at <= cfg.Lead+cfg.Rollout; at += ev.tick {
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

// sliAlerts are the alerts that raise an SLI's regression (the catalog's); the no-data alerts
// (a track missing before the gray starts) are not regressions.
func sliAlerts() map[string]bool {
	out := map[string]bool{}
	for _, s := range catalog.Default().SLIs {
		if s.Alert != nil {
			out[s.Alert.Name] = true
		}
	}
	return out
}

// oneRun replays one run through the engine and the rules and judges it every Look of the
// rollout with every judge.
func oneRun(ctx context.Context, cfg config, sc scenario, i int, src source) (runResult, error) {
	rr := runResult{Scenario: sc, Run: i, FirstFiring: map[string]time.Duration{}, Looks: map[string][]look{}}
	cat := catalog.Default()
	alerts := sliAlerts()
	since := time.Unix(0, 0).UTC().Add(cfg.Lead)
	warm := []parity.Interval{{From: since, To: since.Add(cfg.Warmup)}}
	err := replay(ctx, cfg, src, func(at time.Duration, ts time.Time, q parity.Querier, firing map[string]string) error {
		for name, sev := range firing {
			if _, seen := rr.FirstFiring[name]; !seen && alerts[name] && (sev == "critical" || sev == "warning") {
				rr.FirstFiring[name] = at - cfg.Lead
			}
		}
		rel := at - cfg.Lead
		if rel < cfg.Look || rel%cfg.Look != 0 {
			return nil
		}
		var confirm *parity.Report
		for _, j := range judges {
			if j.ColdOnly && !sc.Cold {
				continue
			}
			opts := parity.Options{
				At: ts, Window: "5m", Selector: `job="poolparity"`,
				Test: cfg.Stat, Sequential: cfg.Seq, StatWindow: cfg.StatWindow, StatStep: cfg.StatStep, SampleFamily: cfg.StatFamily,
				Stat: parity.StatConfirm, StatSince: since, RuleInterval: cfg.Eval,
			}
			switch {
			case j.Seq:
				opts.Stat = parity.StatSequential
			case j.Counts:
				opts.Stat = parity.StatCounts
			}
			if j.Warm {
				opts.Exclude = warm
			}
			var r parity.Report
			if j.Thresholds && confirm != nil {
				r = *confirm
			} else {
				var err error
				if r, err = parity.Evaluate(ctx, q, cat, opts); err != nil {
					return fmt.Errorf("judging at %s: %w", at, err)
				}
			}
			lk := look{At: rel, Verdict: r.Verdict}
			switch {
			case j.Thresholds:
				lk.Verdict, _ = parity.Decide(parity.Decision{Rows: r.Rows})
				lk.Why = failing(r.Rows, false)
			case j.Seq || j.Counts:
				lk.Why = failing(r.Rows, true)
			default:
				lk.Why = failing(parity.Confirm(r.Rows), false)
			}
			if !j.Seq && !j.Counts && j.Warm && !j.Thresholds {
				confirm = &r
			}
			rr.Looks[j.Name] = append(rr.Looks[j.Name], lk)
		}
		return nil
	})
	return rr, err
}

// failing lists the failing rows (their test's failure when seq).
func failing(rows []parity.Row, seq bool) string {
	var out []string
	for _, r := range rows {
		switch {
		case seq && r.Test != nil && r.Test.Verdict == parity.Fail:
			out = append(out, fmt.Sprintf("%s e=%.3g", r.SLI, r.Test.EMax))
		case !seq && r.Verdict == parity.Fail:
			out = append(out, r.SLI)
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// recordingInfo describes one recording of the corpus for the report.
type recordingInfo struct {
	Name, Scenario, Command string
	Steps                   int
	Step                    time.Duration
	Series                  int
}

package parity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// This file is the count-based test (StatCounts): an SLI with count inputs
// (catalog.CountInputs) is judged from the raw per-pod counters of the
// poolparity.counts rules, differenced step by step (internal/parity/seqcount),
// rather than from one per-minute summary per track.

// DefaultCountStep is the step of the count-based test when the count rules'
// evaluation interval is not known: the chart's rules.counts.interval.
const DefaultCountStep = 20 * time.Second

// CountHistory is how far before the rollout's start the count test reads
// stable's counters: their step-to-step wandering bounds the variance of the
// rollout's contrasts from below (seqcount.JudgeAfter), so a drift slower
// than the rollout so far is not read as a regression at the first looks.
const CountHistory = 30 * time.Minute

// CountSeries is one track pair's raw series of one count rule, as the
// count rules store them (promread.ReadRaw): per pod, and per le for a
// histogram's buckets.
type CountSeries struct {
	Stable, Gray []promread.RawSeries
}

// CountsInput is what JudgeCounts judges: one SLI's count inputs' raw
// series since the rollout's start and over stable's history before it.
type CountsInput struct {
	// SLI is the judged SLI (its Counts name the rules; Num and Requests
	// are their series), and Crit its criterion (CriterionOf).
	SLI  catalog.SLI
	Crit Criterion
	// K is the number of SLIs alpha is spent over (the evaluated
	// catalog's), and Alpha the per-rollout alpha (zero: the default).
	K     int
	Alpha float64
	// Since is the rollout's start, At the look's time and Step the count
	// rules' evaluation interval: the steps are Since + n Step up to At,
	// after CountHistory of stable's history before Since.
	Since, At time.Time
	Step      time.Duration
	// Num and Requests are the series of the SLI's Counts.Num and
	// Counts.Requests rules (the latency SLIs' Num is the bucket rule).
	Num, Requests CountSeries
	// Exclude lists the time ranges no step overlapping them is judged in
	// (a warm-up).
	Exclude []Interval
}

// countTest reads s's count inputs since StatSince and judges them
// (JudgeCounts), one of k SLIs.
func (e evaluation) countTest(ctx context.Context, q Querier, s catalog.SLI, crit Criterion, k int) TestResult {
	ci := s.Counts
	in := CountsInput{SLI: s, Crit: crit, K: k, Alpha: e.opts.Sequential.Alpha, Since: e.opts.StatSince, At: e.opts.At, Step: e.intervals[ci.Requests], Exclude: e.opts.Exclude}
	edges, _, young := in.window()
	if young != nil {
		return *young
	}
	from := edges[0] // stable's history first, when the step fits in it
	var why []string
	read := func(rule string) (CountSeries, error) {
		raw, err := promread.ReadRaw(ctx, q, rule+"{"+e.selector(s)+"}", from, edges[len(edges)-1], e.opts.BaselineTrack)
		why = append(why, raw.Why...)
		if raw.Refused {
			return CountSeries{}, errRefused
		}
		return CountSeries{Stable: raw.Stable, Gray: raw.Gray}, err
	}
	var err error
	if in.Num, err = read(ci.Num); err != nil {
		return countError(err, why)
	}
	// The latency SLIs count their requests in the +Inf bucket; their request
	// counter is read too, to hold the +Inf bucket to it (countDefects).
	if in.Requests, err = read(ci.Requests); err != nil {
		return countError(err, why)
	}
	tr := JudgeCounts(in)
	if len(why) > 0 {
		tr.Note = strings.Trim(strings.Join(why, "; ")+"; "+tr.Note, "; ")
	}
	return tr
}

// JudgeCounts is the count-based test of one SLI at one look: it checks
// the raw series for garbage (NO DATA naming the defect), differences them
// step by step, reads the limits at stable's level (before the rollout when
// its history allows) and runs the anytime-valid judge
// (internal/parity/seqcount). Evaluate calls it with the series it read
// from Prometheus, and the count evaluation (hack/verdicteval/countsim)
// with simulated ones: the evaluated judge is the shipped one.
func JudgeCounts(in CountsInput) TestResult {
	ci := in.SLI.Counts
	if ci == nil {
		return TestResult{Verdict: Error, Note: in.SLI.Name + " has no count inputs"}
	}
	edges, lead, young := in.window()
	if young != nil {
		return *young
	}
	part := ci.Proportion || ci.Quantile > 0
	if g := countDefects(
		countSet{track: "stable", reqs: in.Requests.Stable, num: in.Num.Stable, part: part, buckets: ci.Quantile > 0},
		countSet{track: "gray", reqs: in.Requests.Gray, num: in.Num.Gray, part: part, buckets: ci.Quantile > 0},
	); g != "" {
		// Garbage is never evidence: neither a PASS nor a FAIL, whatever the
		// other samples say (a canary holds on it).
		return TestResult{Verdict: NoData, Counts: true, Note: g}
	}
	t := seqcount.Test{Alpha: SequentialTest{Alpha: in.Alpha}.WithDefaults().Alpha, K: max(in.K, 1)}
	excluded := exclusion(in.Exclude, in.step())
	var (
		res    seqcount.Result
		notes  []string
		effect func(seqcount.Result) float64
		err    error
	)
	if ci.Quantile > 0 {
		res, notes, effect, err = judgeLatency(t, in.Crit, ci.Quantile, in.Num, edges, lead, excluded)
	} else {
		res, notes, effect, err = judgeRates(t, in.Crit, ci.Proportion, in.Requests, in.Num, edges, lead, excluded)
	}
	if err != nil {
		return TestResult{Verdict: NoData, Note: strings.Join(append(notes, err.Error()), "; ")}
	}
	return countResult(res, effect, notes)
}

// step returns the count rules' step (DefaultCountStep when unknown).
func (in CountsInput) step() time.Duration {
	if in.Step <= 0 {
		return DefaultCountStep
	}
	return in.Step
}

// window returns the edges of the steps judged, stable's history first
// (lead steps of it, CountHistory back from Since), to At; a NO DATA result
// when the rollout is younger than one step.
func (in CountsInput) window() (edges []time.Time, lead int, young *TestResult) {
	step := in.step()
	rollout := countEdges(in.Since, in.At, step)
	if len(rollout) < 2 {
		return nil, 0, &TestResult{Verdict: NoData, Note: fmt.Sprintf("the rollout is younger than one %s step of the count rules", step)}
	}
	history := leadEdges(in.Since, CountHistory, step)
	return append(history, rollout...), len(history), nil
}

// errRefused marks an answer that is not evidence (a partial one).
var errRefused = errors.New("the answer from Prometheus is not evidence")

func countError(err error, why []string) TestResult {
	if errors.Is(err, errRefused) {
		return TestResult{Verdict: NoData, Note: strings.Join(why, "; ")}
	}
	return TestResult{Verdict: Error, Note: err.Error()}
}

// countEdges returns the step edges from since to at, every step; the
// last step ends at or before at.
func countEdges(since, at time.Time, step time.Duration) []time.Time {
	if since.IsZero() || !since.Before(at) {
		return nil
	}
	var edges []time.Time
	for t := since; !t.After(at); t = t.Add(step) {
		edges = append(edges, t)
	}
	return edges
}

// leadEdges returns the step edges of the history before since: since -
// n step, ..., since - step, n = history/step (none when the step does not
// fit in it).
func leadEdges(since time.Time, history, step time.Duration) []time.Time {
	if step <= 0 {
		return nil
	}
	n := int(history / step)
	out := make([]time.Time, 0, n)
	for k := n; k >= 1; k-- {
		out = append(out, since.Add(-time.Duration(k)*step))
	}
	return out
}

// history returns stable's counts of the first lead steps (before the
// rollout's start), with their per-pod counts (the pod spread reads them),
// and the steps after them.
func history(steps []seqcount.Step, lead int) ([]seqcount.Counts, []seqcount.Step) {
	lead = min(lead, len(steps))
	hist := make([]seqcount.Counts, lead)
	for i, st := range steps[:lead] {
		hist[i] = st.Stable
	}
	return hist, steps[lead:]
}

// exclusion reports whether the step ending at T overlaps an excluded
// interval (a warm-up).
func exclusion(exclude []Interval, step time.Duration) func(time.Time) bool {
	return func(t time.Time) bool {
		for _, iv := range exclude {
			if iv.overlaps(t, step) {
				return true
			}
		}
		return false
	}
}

// keep drops the excluded steps, and the steps before both tracks first
// served requests together: the evidence starts when both tracks serve (a
// gray pod still starting, a load not yet arrived); a step without requests
// after that is the judge's to count against the data.
func keep(steps []seqcount.Step, excluded func(time.Time) bool) ([]seqcount.Step, int) {
	out := steps[:0:0]
	started := false
	for _, st := range steps {
		started = started || (st.Stable.Requests > 0 && st.Gray.Requests > 0)
		if started && !excluded(st.T) {
			out = append(out, st)
		}
	}
	return out, len(steps) - len(out)
}

// judgeRates judges a proportion (5xx) or an amount per request (CPU,
// heap) from the per-pod counters of both tracks.
// The first lead steps of edges are stable's history (before the rollout).
func judgeRates(t seqcount.Test, crit Criterion, proportion bool, reqs, num CountSeries, edges []time.Time, lead int, excluded func(time.Time) bool) (seqcount.Result, []string, func(seqcount.Result) float64, error) {
	kind := seqcount.PerRequest
	if proportion {
		kind = seqcount.Proportion
	}
	sr, sn, snotes := trackCounts("stable", reqs.Stable, num.Stable, edges)
	gr, gn, gnotes := trackCounts("gray", reqs.Gray, num.Gray, edges)
	notes := append(snotes, gnotes...)
	steps := make([]seqcount.Step, len(edges)-1)
	for i := range steps {
		steps[i] = seqcount.Step{T: edges[i+1], Stable: stepCounts(sr, sn, i), Gray: stepCounts(gr, gn, i)}
	}
	hist, steps := history(steps, lead)
	// The limits are read at stable's level before the rollout when its
	// history has enough steps, so that every look of a rollout judges
	// against the same limits; else at its level over the rollout so far.
	var levelNum, levelReq float64
	if servedSteps(hist) >= levelMinSteps {
		for _, h := range hist {
			levelNum += h.Num
			levelReq += h.Requests
		}
		notes = append(notes, "limits at stable's level before the rollout")
	} else {
		for _, st := range steps {
			levelNum += st.Stable.Num
			levelReq += st.Stable.Requests
		}
		notes = append(notes, "limits at stable's level over the rollout so far (too little history before it)")
	}
	steps, dropped := keep(steps, excluded)
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d steps in a warm-up or before both tracks served left out", dropped))
	}
	if levelReq <= 0 || !finite(levelNum) || !finite(levelReq) {
		return seqcount.Result{}, notes, nil, fmt.Errorf("the stable track served no requests in the count rules' steps")
	}
	lim, err := CountLimits(crit, levelNum/levelReq)
	if err != nil {
		return seqcount.Result{}, notes, nil, err
	}
	effect := func(r seqcount.Result) float64 { return r.Diff }
	if crit.Comparison.IsRatio() {
		effect = func(r seqcount.Result) float64 { return r.Ratio }
	}
	return t.JudgeAfter(kind, lim, hist, steps), notes, effect, nil
}

// CountLimits turns the criterion's floor and threshold, at stable's level,
// into the count test's boundaries: FAIL beyond the floor, PASS within the
// margin (the threshold). The count-based test reads them at every look, and
// the count evaluation (hack/verdicteval/countsim) with this same function. A threshold at or within the floor (a ratio limit
// under 1, such as a maxRatio of 0.9 that asks for an improvement, or a
// floor wider than the threshold at a low level) leaves no room between
// them: the margin is then the floor plus 10% of stable's level for a
// ratio, twice the floor for a difference.
func CountLimits(crit Criterion, level float64) (seqcount.Limits, error) {
	floor := crit.FloorAt(level)
	switch crit.Comparison {
	case RatioAtMost:
		if level <= 0 {
			return seqcount.Limits{}, fmt.Errorf("stable's level is %g: a ratio limit needs a positive one", level)
		}
		f := floor / level
		m := crit.Threshold - 1
		if m <= f {
			m = f + 0.10
		}
		return seqcount.Limits{Floor: seqcount.Bound{Rel: f}, Margin: seqcount.Bound{Rel: m}}, nil
	case DeltaAtMost:
		m := math.Max(crit.Threshold, floor)
		if m <= floor {
			m = 2 * math.Max(floor, 1e-9)
		}
		return seqcount.Limits{Floor: seqcount.Bound{Abs: floor}, Margin: seqcount.Bound{Abs: m}}, nil
	}
	return seqcount.Limits{}, fmt.Errorf("comparison %s has no count-based test", crit.Comparison)
}

// podSteps is one track's per-pod increases per step, by pod.
type podSteps map[string][]float64

// trackCounts differences one track's request and numerator series per
// pod; notes name what Increase left out.
func trackCounts(track string, reqs, num []promread.RawSeries, edges []time.Time) (podSteps, podSteps, []string) {
	r, rn := podIncreases(reqs, edges)
	n, nn := podIncreases(num, edges)
	var notes []string
	for _, l := range append(rn, nn...) {
		notes = append(notes, track+": "+l)
	}
	return r, n, notes
}

func podIncreases(series []promread.RawSeries, edges []time.Time) (podSteps, []string) {
	out := podSteps{}
	var notes []string
	for _, rs := range series {
		inc, _, n := seqcount.Increase([]seqcount.Series{toSeries(rs)}, edges)
		out[rs.ID] = inc
		notes = append(notes, n...)
	}
	return out, notes
}

func toSeries(rs promread.RawSeries) seqcount.Series {
	s := seqcount.Series{Pod: rs.ID, Samples: make([]seqcount.Sample, len(rs.Points))}
	for i, p := range rs.Points {
		s.Samples[i] = seqcount.Sample{T: p.T, V: p.V}
	}
	return s
}

// stepCounts is one track's counts in step i, with its pods': a pod with
// requests but no numerator series counts 0 of it (no 5xx yet).
func stepCounts(reqs, num podSteps, i int) seqcount.Counts {
	var c seqcount.Counts
	for _, pod := range sortedKeys(reqs) {
		p := seqcount.Counts{Pod: pod, Requests: reqs[pod][i]}
		if n, ok := num[pod]; ok {
			p.Num = n[i]
		}
		c.Requests += p.Requests
		c.Num += p.Num
		c.Pods = append(c.Pods, p)
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// judgeLatency judges a latency quantile from both tracks' bucket counters
// (the +Inf bucket counts the requests), with the tail's FAIL test at the
// bound above the judged one (seqcount.LatencyTest, JudgeTail).
// The first lead steps of edges are stable's history (before the rollout).
func judgeLatency(t seqcount.Test, crit Criterion, q float64, buckets CountSeries, edges []time.Time, lead int, excluded func(time.Time) bool) (seqcount.Result, []string, func(seqcount.Result) float64, error) {
	stable, err := histogram(buckets.Stable)
	if err != nil {
		return seqcount.Result{}, nil, nil, fmt.Errorf("stable's histogram: %w", err)
	}
	gray, err := histogram(buckets.Gray)
	if err != nil {
		return seqcount.Result{}, nil, nil, fmt.Errorf("gray's histogram: %w", err)
	}
	// Stable's quantile before the rollout when its history has enough
	// steps (judgeRates), else over the rollout so far.
	levelEdges, levelNote := edges[min(lead, len(edges)-1):], "limits at stable's level over the rollout so far (too little history before it)"
	if lead > 0 && servedSteps(countSteps(stable.Count, edges[:lead+1])) >= levelMinSteps {
		levelEdges, levelNote = edges[:lead+1], "limits at stable's level before the rollout"
	}
	level := pooledQuantile(stable, levelEdges, q)
	if !(level > 0) {
		return seqcount.Result{}, nil, nil, fmt.Errorf("stable's pooled p%g is not positive", q*100)
	}
	lim, err := CountLimits(crit, level)
	if err != nil {
		return seqcount.Result{}, nil, nil, err
	}
	// The judged bound and its limits too are read where the level is: before the rollout, so
	// that every look judges against the same ones.
	var survey []time.Time
	if len(levelEdges) < len(edges) {
		survey = levelEdges
	}
	l, err := seqcount.LatencyTestFrom(stable, gray, edges, survey, q, 1+lim.Floor.Rel, 1+lim.Margin.Rel)
	notes := append(l.Notes, levelNote)
	if err != nil {
		return seqcount.Result{}, notes, nil, err
	}
	hist, steps := history(l.Steps, lead)
	steps, dropped := keep(steps, excluded)
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d steps in a warm-up or before both tracks served left out", dropped))
	}
	judged := fmt.Sprintf("judged on the requests slower than %s (stable's p%g %s)", FormatValue(Seconds, l.Bound), q*100, FormatValue(Seconds, level))
	var tail *seqcount.TailTest
	if l.Tail != nil {
		// The same steps at the bound above: keep drops the same ones (both read _count).
		th, ts := history(l.Tail.Steps, lead)
		ts, _ = keep(ts, excluded)
		tail = &seqcount.TailTest{Steps: ts, Limits: l.Tail.Limits, Bound: l.Tail.Bound, History: th}
		judged += fmt.Sprintf(", and for a FAIL also on those slower than %s", FormatValue(Seconds, l.Tail.Bound))
	}
	notes = append(notes, judged)
	return t.JudgeTail(seqcount.Proportion, l.Limits, hist, steps, tail), notes, func(r seqcount.Result) float64 { return r.Ratio }, nil
}

// histogram sorts one track's bucket series by le into a seqcount
// Histogram; the +Inf bucket is its count. le is keyed by its value, not its
// spelling: Prometheus 3 stores le="1.0" and le="10.0" where client_golang
// exposes "1" and "10", and a series' le changes spelling when Prometheus is
// upgraded under it.
func histogram(series []promread.RawSeries) (seqcount.Histogram, error) {
	byLe := map[float64][]seqcount.Series{}
	for _, rs := range series {
		b, err := parseLe(rs.Le)
		if err != nil {
			return seqcount.Histogram{}, err
		}
		byLe[b] = append(byLe[b], toSeries(rs))
	}
	var h seqcount.Histogram
	for b, ss := range byLe {
		if math.IsInf(b, 1) {
			h.Count = ss
			continue
		}
		h.Bounds = append(h.Bounds, b)
	}
	if h.Count == nil {
		return h, fmt.Errorf("no +Inf bucket (%d series)", len(series))
	}
	slices.Sort(h.Bounds)
	for _, b := range h.Bounds {
		h.Buckets = append(h.Buckets, byLe[b])
	}
	return h, nil
}

// levelMinSteps is the fewest steps with requests in stable's history before
// the rollout for the limits to be read at its level there.
const levelMinSteps = seqcount.DefaultMinSteps

// servedSteps counts the steps with requests.
func servedSteps(steps []seqcount.Counts) int {
	n := 0
	for _, c := range steps {
		if c.Requests > 0 && finite(c.Requests) {
			n++
		}
	}
	return n
}

// countSteps returns the requests the count series hold in each step of
// edges, as Counts.
func countSteps(count []seqcount.Series, edges []time.Time) []seqcount.Counts {
	inc, _, _ := seqcount.Increase(count, edges)
	out := make([]seqcount.Counts, len(inc))
	for i, v := range inc {
		out[i].Requests = v
	}
	return out
}

// pooledQuantile is the q-quantile of the histogram's increases over all
// the steps, interpolated linearly within its bucket as histogram_quantile
// does.
func pooledQuantile(h seqcount.Histogram, edges []time.Time, q float64) float64 {
	total := sum(h.Count, edges)
	if !(total > 0) {
		return math.NaN()
	}
	rank, prevB, prevC := q*total, 0.0, 0.0
	for j, b := range h.Bounds {
		c := sum(h.Buckets[j], edges)
		if c >= rank {
			if c == prevC {
				return b
			}
			return prevB + (b-prevB)*(rank-prevC)/(c-prevC)
		}
		prevB, prevC = b, c
	}
	return prevB
}

func sum(series []seqcount.Series, edges []time.Time) float64 {
	inc, _, _ := seqcount.Increase(series, edges)
	var s float64
	for _, v := range inc {
		s += v
	}
	return s
}

// countResult maps the count test's result to a row's test result.
func countResult(r seqcount.Result, effect func(seqcount.Result) float64, notes []string) TestResult {
	tr := TestResult{
		NStable: r.Steps, NGray: r.Steps, E: r.EFail, EMax: r.EFail, EPass: r.EPass, Bar: r.Bar,
		Rejected: r.Rejected, Counts: true,
	}
	if r.Outcome == seqcount.Fail {
		tr.Passed = r.Passed
	}
	if effect != nil {
		if v := effect(r); finite(v) {
			tr.Effect = v
		}
	}
	switch r.Outcome {
	case seqcount.Fail:
		tr.Verdict = Fail
	case seqcount.Pass:
		tr.Verdict = Pass
	default:
		tr.Verdict = NoData
	}
	tr.Note = strings.Join(append([]string{r.Note}, notes...), "; ")
	tr.Note = strings.Trim(tr.Note, "; ")
	return tr
}

package parity

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
)

// This file is the sequential judge; the package documentation derives
// its e-value and why it is valid.

// Sequential test defaults.
const (
	// SequentialMinSamples is the fewest paired samples the sequential test
	// judges; fewer is NO DATA, which holds a step (never a verdict on the
	// thresholds alone). The test also waits for the fewest samples on
	// which it could reject (SequentialTest.Decisive), usually more.
	SequentialMinSamples = 3
	// DefaultSequentialScale is tau, the prior scale of the standardised
	// effect (mu/sigma): a regression worth stopping a rollout for moves an
	// SLI by a few per-minute standard deviations. With tau = 3 and 8 SLIs
	// at alpha 0.01 a rejection needs at least 5 samples (E_n is at most
	// (1+n tau^2)^((n-1)/2)).
	DefaultSequentialScale = 3.0
)

// Interval is a time range, From to To inclusive.
type Interval struct {
	From, To time.Time
}

// overlaps reports whether the sample taken at t over the range before it,
// (t-rng, t], overlaps the interval.
func (iv Interval) overlaps(t time.Time, rng time.Duration) bool {
	return !t.Before(iv.From) && (t.Add(-rng).Before(iv.To) || !t.After(iv.To))
}

// Pair is one step's value of the baseline (stable) and the gray track.
// For a proportion SLI (Criterion.Proportion) NStable and NGray are the
// events each track's value is a share of in the step (its requests); 0 is
// unknown.
type Pair struct {
	T            time.Time
	Stable, Gray float64
	NStable      float64
	NGray        float64
}

// SequentialTest configures the sequential judge.
type SequentialTest struct {
	// Alpha is the per-rollout false-FAIL rate, spent over the SLIs tested
	// together (Bonferroni); zero takes the catalog's SequentialAlpha.
	Alpha float64
	// Scale is tau, the prior scale of the standardised effect; zero takes
	// DefaultSequentialScale.
	Scale float64
	// MinSamples is the fewest paired samples judged; zero takes
	// SequentialMinSamples.
	MinSamples int
}

func (s SequentialTest) withCatalog(st catalog.Stat) SequentialTest {
	if s.Alpha <= 0 || s.Alpha >= 1 {
		s.Alpha = st.SequentialAlpha
	}
	if s.Scale <= 0 {
		s.Scale = DefaultSequentialScale
	}
	if s.MinSamples < 2 {
		s.MinSamples = SequentialMinSamples
	}
	return s
}

// WithDefaults returns s with the settings it leaves unset (or out of range)
// taken from the default catalog and the package defaults, as the judge
// uses them.
func (s SequentialTest) WithDefaults() SequentialTest {
	if s.Alpha > 0 && s.Alpha < 1 {
		return s.withCatalog(catalog.Stat{SequentialAlpha: s.Alpha}) // the catalog has nothing else to give
	}
	return s.withCatalog(catalog.Default().Stat)
}

// Bar is the e-value at which one of k SLIs rejects: k/Alpha.
func (s SequentialTest) Bar(k int) float64 { return s.WithDefaults().bar(k) }

// Decisive returns the fewest paired samples on which the test can decide
// between k SLIs: the larger of MinSamples and the smallest n whose largest
// possible e-value, (1 + n tau^2)^((n-1)/2), reaches the bar k/Alpha. On
// fewer samples no data could fail the SLI, so a PASS would say nothing.
func (s SequentialTest) Decisive(k int) int { return s.WithDefaults().decisive(k) }

// bar is Bar of an s with its defaults filled in.
func (s SequentialTest) bar(k int) float64 { return float64(max(k, 1)) / s.Alpha }

// decisive is Decisive of an s with its defaults filled in.
func (s SequentialTest) decisive(k int) int {
	logBar := math.Log(s.bar(k))
	n := s.MinSamples
	for float64(n-1)/2*math.Log1p(float64(n)*s.Scale*s.Scale) < logBar {
		n++
	}
	return n
}

// MixtureLogE returns log E_n of the scale-invariant normal mixture (see
// the file's comment) for the samples x against the null mean 0: 0 (E =
// 1) for fewer than two samples or all zeros.
func MixtureLogE(x []float64, tau float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	return mixtureLogE(sum, sq, len(x), tau)
}

func mixtureLogE(sum, sq float64, n int, tau float64) float64 {
	if n < 2 || sq <= 0 {
		return 0
	}
	r := 1 + float64(n)*tau*tau
	q := sum * sum * tau * tau / (r * sq)
	// Cauchy-Schwarz: sum^2 <= n sq, so q <= n tau^2/r < 1; rounding may not.
	q = math.Min(q, float64(n)*tau*tau/r)
	return -0.5*math.Log(r) - float64(n)/2*math.Log1p(-q)
}

// csHalfWidth returns t*_n, the half-width of the mixture's confidence
// sequence in units of s/sqrt(n), at e-value bar c; +Inf while unbounded.
func csHalfWidth(n int, tau, c float64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	r := 1 + float64(n)*tau*tau
	k := math.Exp(2 / float64(n) * (math.Log(c) + 0.5*math.Log(r)))
	if k >= r {
		return math.Inf(1)
	}
	return math.Sqrt(float64(n-1) * (k - 1) / (1 - k/r))
}

// Judge runs the sequential test on the pairs of the criterion's SLI
// (in time order), one of k SLIs tested together.
func (s SequentialTest) Judge(c Criterion, pairs []Pair, k int) TestResult {
	s = s.WithDefaults()
	bar, need := s.bar(k), s.decisive(k)
	sign := 1.0
	if !c.Comparison.HigherIsWorse() {
		sign = -1
	}
	res := TestResult{Bar: bar, E: 1, EMax: 1}
	run := s.accumulate(c, pairs, sign, need, &res)
	res.NStable, res.NGray = run.n, run.n
	if run.n < need {
		res.Verdict = NoData
		res.Note = fmt.Sprintf("too few paired samples for the sequential test: %d, need %d (the fewest on which it can reach its bar e >= %g)", run.n, need, bar)
		if left := run.leftOut(); left != "" {
			res.Note += " (" + left + ")"
		}
		return res
	}
	s.conclude(c, run, sign, &res)
	return res
}

// JudgeAt is Judge at the analysis time at, the pairs sampled every step:
// it also counts the steps from the first pair to at that have no pair
// (TestResult.Gaps), and a test whose last pair is more than two steps
// older than at is NO DATA naming the gap, whatever it found before: a
// track that stopped serving (or whose series broke) must not pass on old
// samples. A FAIL stands, its evidence does not age.
func (s SequentialTest) JudgeAt(c Criterion, pairs []Pair, k int, at time.Time, step time.Duration) TestResult {
	res := s.Judge(c, pairs, k)
	if step <= 0 || len(pairs) == 0 {
		return res
	}
	first, last := pairs[0].T, c.lastUsable(pairs)
	if want := int(at.Sub(first)/step) + 1; want > len(pairs) {
		res.Gaps = want - len(pairs)
	}
	if res.Verdict == Fail || !last.Before(at.Add(-2*step)) {
		return res
	}
	res.Verdict = NoData
	note := fmt.Sprintf("no usable paired sample in the last %s (more than two %s steps; %d of the steps since the first sample have none)",
		at.Sub(first).Round(time.Second), step, res.Gaps)
	if !last.IsZero() {
		note = fmt.Sprintf("no paired sample since %s, %s before the analysis (more than two %s steps; %d of the steps since the first sample have none)",
			last.UTC().Format(time.RFC3339), at.Sub(last).Round(time.Second), step, res.Gaps)
	}
	res.Note = strings.TrimPrefix(note+"; "+res.Note, "; ")
	return res
}

// lastUsable returns the time of the last pair the test can use, zero
// when none is.
func (c Criterion) lastUsable(pairs []Pair) time.Time {
	for i := len(pairs) - 1; i >= 0; i-- {
		if _, _, ok := c.sampleOf(pairs[i]); ok {
			return pairs[i].T
		}
	}
	return time.Time{}
}

// seqRun is what the sequential test has summed over the usable pairs: how
// many (and how many it left out), the sums of the paired differences y,
// of their squares and of the stable levels, and the last floor.
type seqRun struct {
	n                 int
	notFinite, notPos int
	sumY, sumY2, sumL float64
	lastF             float64
	// counts are the event counts of a proportion's usable pairs.
	counts counts
}

// leftOut says which pairs the test left out and why, "" for none.
func (r seqRun) leftOut() string {
	var why []string
	if r.notFinite > 0 {
		why = append(why, fmt.Sprintf("%d not finite (NaN or Inf)", r.notFinite))
	}
	if r.notPos > 0 {
		why = append(why, fmt.Sprintf("%d a ratio of a zero or negative value", r.notPos))
	}
	if len(why) == 0 {
		return ""
	}
	return "left out: " + strings.Join(why, ", ")
}

// accumulate runs the e-process over the pairs in time order: it sets res's
// last and largest e-value, and a FAIL at the first pair (from the need-th
// on) where e reaches res.Bar.
func (s SequentialTest) accumulate(c Criterion, pairs []Pair, sign float64, need int, res *TestResult) seqRun {
	var r seqRun
	for _, p := range pairs {
		y, level, ok := c.sampleOf(p)
		if !ok {
			if !finite(p.Gray) || !finite(p.Stable) {
				r.notFinite++
			} else {
				r.notPos++
			}
			continue
		}
		r.counts.add(p)
		r.n++
		r.sumY += y
		r.sumY2 += y * y
		r.sumL += level
		f := c.floorOn(r.sumL/float64(r.n), sign)
		r.lastF = f
		// x_i = sign*y_i - f, summed.
		sx := sign*r.sumY - float64(r.n)*f
		sq := r.sumY2 - 2*sign*f*r.sumY + float64(r.n)*f*f
		e := 1.0
		if sx > 0 {
			e = math.Exp(mixtureLogE(sx, sq, r.n, s.Scale))
		}
		res.E = e
		res.EMax = math.Max(res.EMax, e)
		if r.n >= need && e >= res.Bar && res.Verdict != Fail {
			res.Verdict = Fail
			res.Rejected = p.T.UTC()
		}
	}
	return r
}

// conclude sets, after enough pairs, res's estimate, margin and confidence
// sequence, and its verdict: FAIL as accumulate found it, PASS when the
// confidence sequence rules out any effect beyond the margin, else NO DATA
// (inconclusive).
func (s SequentialTest) conclude(c Criterion, r seqRun, sign float64, res *TestResult) {
	n := r.n
	mean := r.sumY / float64(n)
	res.Effect = c.effectOf(mean)
	res.Floor = r.lastF
	margin := c.passMargin(r.lastF, sign)
	res.Margin = c.effectOf(sign * margin)
	sd := math.Sqrt(math.Max(0, (r.sumY2-float64(n)*mean*mean)/float64(n-1)))
	var half float64 // the confidence sequence's half-width on the test's scale, once bounded
	if h := csHalfWidth(n, s.Scale, res.Bar); !math.IsInf(h, 0) {
		half = h * sd / math.Sqrt(float64(n))
		b, w := c.effectOf(mean-sign*half), c.effectOf(mean+sign*half)
		res.Bound, res.Worst = &b, &w
	}
	if res.Verdict == Fail {
		return
	}
	why := c.holdPass(r, sign*mean, sd, sign*mean+half, margin, sign, res.Bar)
	switch {
	case res.Worst != nil && why == "":
		res.Verdict = Pass
	default:
		res.Verdict = NoData
		worst := "unbounded"
		if res.Worst != nil {
			worst = fmt.Sprintf("%.4g", *res.Worst)
		}
		res.Note = fmt.Sprintf("inconclusive after %d paired samples: no regression shown (e=%.3g, bar %.3g) and none ruled out (estimate %.4g, worst not ruled out %s, margin %.4g)", n, res.E, res.Bar, res.Effect, worst, res.Margin)
		if why != "" {
			res.Note += "; " + why
		}
	}
}

// holdPass returns why a bounded confidence sequence is no PASS yet, ""
// when it is one: its worse end (on the test's scale, in the worse
// direction) beyond the margin; zero variance, which makes the sequence's
// width 0 and proves nothing by itself; and for a proportion, request
// counts that do not bound the tracks' rates within the margin (or are
// unknown while the variance is zero). est is the estimate in the worse
// direction and sd the samples' standard deviation.
func (c Criterion) holdPass(r seqRun, est, sd, worst, margin, sign, bar float64) string {
	counted := c.Proportion && r.counts.nGray > 0 && r.counts.nStable > 0
	switch {
	case sd > 0 && worst > margin:
		return "the confidence sequence's worse end is beyond the margin"
	case sd == 0 && est > margin:
		return "every sample is the same, beyond the margin"
	case sd == 0 && !counted:
		if c.Proportion {
			return "zero variance and no request counts: a proportion without a single event in a few samples proves nothing by itself"
		}
		return "zero variance: every paired difference is the same, which proves nothing by itself"
	case !c.Proportion:
		return ""
	case !counted:
		return r.counts.countNote(0, margin)
	}
	if w := r.counts.worst(sign, bar); w > margin {
		return r.counts.countNote(w, margin)
	}
	return ""
}

// passMargin returns the largest effect on the test's scale, in the worse
// direction sign, that still passes the SLI's threshold row: the threshold
// (log Threshold for a ratio SLI, 0 for a gray-only one, where y is already
// gray - threshold) or the floor f, whichever is larger, since a breach
// within the floor passes. A PASS needs the confidence sequence's worse
// end within it.
func (c Criterion) passMargin(f, sign float64) float64 {
	var t float64
	switch {
	case c.Comparison == GrayAtLeast:
		t = 0
	case c.Comparison.IsRatio():
		if c.Threshold <= 0 {
			return math.Inf(1) // every ratio is at least 0
		}
		t = sign * math.Log(c.Threshold)
	default:
		t = sign * c.Threshold
	}
	return math.Max(t, f)
}

// sampleOf returns the test's sample y of one pair and the baseline's
// level the floor scales with; ok is false for a NaN or infinite value
// and for a ratio of a value <= 0.
func (c Criterion) sampleOf(p Pair) (y, level float64, ok bool) {
	switch {
	case !finite(p.Gray) || !finite(p.Stable):
		return 0, 0, false
	case c.Comparison == GrayAtLeast:
		return p.Gray - c.Threshold, c.Threshold, true
	case c.Comparison.IsRatio():
		if p.Stable <= 0 || p.Gray <= 0 {
			return 0, 0, false
		}
		return math.Log(p.Gray / p.Stable), p.Stable, true
	}
	return p.Gray - p.Stable, p.Stable, true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// floorOn returns the floor on the test's scale (log ratio or points) in
// the worse direction sign, at the baseline's level.
func (c Criterion) floorOn(level, sign float64) float64 {
	f := c.FloorAt(level)
	if !c.Comparison.IsRatio() {
		return f
	}
	if level <= 0 {
		return 0
	}
	if sign > 0 {
		return math.Log1p(f / level)
	}
	if f >= level {
		return math.Inf(1) // gray cannot be lower than stable by more than stable
	}
	return -math.Log1p(-f / level)
}

// effectOf returns a mean on the test's scale in the SLI's terms: a ratio
// gray/stable for a ratio SLI, else the difference.
func (c Criterion) effectOf(m float64) float64 {
	if c.Comparison.IsRatio() {
		return math.Exp(m)
	}
	return m
}

// FloorAt returns the criterion's floor at the baseline's level (see
// catalog.FloorAt).
func (c Criterion) FloorAt(level float64) float64 { return catalog.FloorAt(c.Floor, c.RelFloor, level) }

// pairs joins the tracks' samples by time, leaving out the times either
// lacks; a gray-only criterion pairs gray's samples with zero.
func pairs(c Criterion, stable, gray []Point) []Pair {
	if c.Comparison == GrayAtLeast {
		out := make([]Pair, len(gray))
		for i, g := range gray {
			out[i] = Pair{T: g.T, Gray: g.V}
		}
		return out
	}
	st := make(map[int64]float64, len(stable))
	for _, p := range stable {
		st[p.T.UnixMilli()] = p.V
	}
	var out []Pair
	for _, g := range gray {
		if v, ok := st[g.T.UnixMilli()]; ok {
			out = append(out, Pair{T: g.T, Stable: v, Gray: g.V})
		}
	}
	return out
}

// exclude drops the points whose sample range (rng before their time)
// overlaps an excluded interval.
func exclude(points []Point, ivs []Interval, rng time.Duration) []Point {
	if len(ivs) == 0 {
		return points
	}
	out := points[:0:0]
	for _, p := range points {
		drop := false
		for _, iv := range ivs {
			if iv.overlaps(p.T, rng) {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, p)
		}
	}
	return out
}

// SequentialRows returns the rows as the sequential judge decides them:
// each row's verdict is its test's (FAIL only on a rejection, PASS only
// once its confidence sequence is within the margin, else NO DATA), with a
// threshold FAIL the test passes kept as a PASS with a note, and a row
// without a test result NO DATA.
func SequentialRows(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		switch {
		case r.Test == nil:
			r.Verdict = NoData
			r.Note = "not tested"
		case r.Verdict == NoData && r.Test.Verdict == Pass:
			// Evidence of the past is no PASS for a track that has no current value (it
			// stopped serving, or its series turned to garbage).
			if r.Note == "" {
				r.Note = "no current value"
			}
			r.Note += "; the test's PASS on earlier samples does not count without it"
		case r.Test.Verdict == Pass && r.Verdict == Fail:
			r.Verdict = Pass
			r.Note = "over the threshold but no anytime-valid evidence (" + r.Test.Summary() + ")"
		default:
			if r.Test.Verdict != r.Verdict && r.Test.Note != "" {
				r.Note = r.Test.Note
			}
			r.Verdict = r.Test.Verdict
		}
		out[i] = r
	}
	return out
}

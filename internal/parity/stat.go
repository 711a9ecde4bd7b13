package parity

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity/mwu"
)

// StatTest configures the statistical second opinion: a one-sided
// Mann-Whitney U test of the gray samples against the stable samples of an
// SLI over the analysis window, with an effect-size bar.
type StatTest struct {
	// Confidence is the confidence level; the test fails an SLI when its
	// p-value is below 1 - Confidence. Zero takes the catalog's.
	Confidence float64
	// MinEffect is the smallest Vargha-Delaney A (the probability that a
	// gray sample is worse than a stable one) that fails an SLI; 0.5 is no
	// effect. Zero takes the catalog's.
	MinEffect float64
	// MinSamples is the fewest samples per track; fewer is NO DATA.
	// Zero takes the catalog's.
	MinSamples int
}

// DefaultStatTest returns the catalog's defaults (catalog.Default().Stat).
func DefaultStatTest() StatTest { return StatTest{}.withCatalog(catalog.Default().Stat) }

// TestResult is the statistical verdict on one SLI.
type TestResult struct {
	// Verdict: FAIL when gray is worse with p below 1 - confidence, an
	// effect of at least MinEffect and (for a criterion with a floor) a
	// median difference above the floor; NO DATA with too few samples.
	Verdict Verdict `json:"verdict"`
	// P is the one-sided p-value; A the effect size (P(gray worse)).
	P float64 `json:"p"`
	A float64 `json:"a"`
	// MedianDelta is median(gray) - median(stable).
	MedianDelta float64 `json:"median_delta"`
	// NStable and NGray are the sample counts.
	NStable int `json:"n_stable"`
	NGray   int `json:"n_gray"`
	// Note explains a NO DATA or a pass held by the floor.
	Note string `json:"note,omitempty"`

	// The sequential test's figures (StatSequential; N is NGray): E is the
	// e-value for "gray worse than the floor" after the last sample (1
	// while the samples point the other way), EMax its largest value at any
	// look, Bar the value that rejects (k/alpha).
	E    float64 `json:"e,omitempty"`
	EMax float64 `json:"e_max,omitempty"`
	Bar  float64 `json:"bar,omitempty"`
	// Counts marks the count-based test's result (StatCounts): E is then
	// its e-value against "gray within the floor", EPass its e-value
	// against "gray at or beyond the margin" (a PASS at Bar), and NGray
	// the steps it judged.
	Counts bool    `json:"counts,omitempty"`
	EPass  float64 `json:"e_pass,omitempty"`
	// Effect is the estimated effect, gray/stable for a ratio SLI (the
	// geometric mean of the per-step ratios), else gray - stable (gray -
	// threshold for a gray-only SLI). Bound and Worst are the ends of the
	// confidence sequence on it at the level of Bar (nil while unbounded):
	// Bound the least-bad effect it allows (a rejection's evidence is that
	// Bound is past Floor), Worst the worst it has not ruled out. Margin is
	// the worst effect the SLI's threshold row passes (its threshold or its
	// floor, whichever is larger): the test PASSes only once Worst is
	// within Margin, and until then, without a rejection, it is NO DATA.
	Effect float64  `json:"effect,omitempty"`
	Bound  *float64 `json:"bound,omitempty"`
	Worst  *float64 `json:"worst,omitempty"`
	Margin float64  `json:"margin,omitempty"`
	// Floor is the floor the sequential test used, on its scale (log
	// ratio or points).
	Floor float64 `json:"floor,omitempty"`
	// Rejected is the time of the sample at which the sequential test
	// rejected; zero when it did not.
	Rejected time.Time `json:"rejected,omitzero"`
	// Passed is, for a count-based FAIL after a PASS (the watch), the time
	// of the PASS it overturned; zero otherwise.
	Passed time.Time `json:"passed,omitzero"`
	// Gaps is how many steps between the sequential test's first paired
	// sample and the analysis time have none (JudgeAt); a test whose last
	// paired sample is more than two steps old does not PASS.
	Gaps int `json:"gaps,omitempty"`
}

// sequential reports whether the result is the sequential test's.
func (t TestResult) sequential() bool { return t.Bar > 0 }

// Summary states the test's figures in a few words: the p-value and effect size of the
// Mann-Whitney test, or the e-value, its largest value, the bar and the sample count of the
// sequential test.
func (t TestResult) Summary() string {
	if t.Counts {
		return fmt.Sprintf("e=%s (FAIL), %s (PASS), bar %.3g, %d steps", fmtEValue(t.E), fmtEValue(t.EPass), t.Bar, t.NGray)
	}
	if t.sequential() {
		s := fmt.Sprintf("e=%.3g, max %.3g, bar %.3g, n=%d", t.E, t.EMax, t.Bar, t.NGray)
		if t.Worst != nil {
			s += fmt.Sprintf(", worst %.4g, margin %.4g", *t.Worst, t.Margin)
		}
		return s
	}
	return fmt.Sprintf("p=%.2g, A=%.2f", t.P, t.A)
}

// Judge runs the test on samples of the criterion's SLI. Which direction
// is worse follows the comparison: higher for the at-most limits, lower
// for the at-least ones.
func (s StatTest) Judge(c Criterion, stable, gray []float64) TestResult {
	s = s.withDefaults()
	res := TestResult{NStable: len(stable), NGray: len(gray)}
	if c.Comparison == GrayAtLeast {
		return s.judgeGray(c, gray, res)
	}
	if len(stable) < s.MinSamples || len(gray) < s.MinSamples {
		res.Verdict = NoData
		res.Note = fmt.Sprintf("too few samples for the test: stable %d, gray %d, need %d each", len(stable), len(gray), s.MinSamples)
		return res
	}
	alt, sign := mwu.Greater, 1.0
	if !c.Comparison.HigherIsWorse() {
		alt, sign = mwu.Less, -1
	}
	r, err := mwu.Test(stable, gray, alt)
	if err != nil {
		res.Verdict, res.Note = Error, err.Error()
		return res
	}
	res.P = r.P
	res.A = r.A
	if alt == mwu.Less {
		res.A = 1 - r.A
	}
	res.MedianDelta = median(gray) - median(stable)
	worse := r.P < 1-s.Confidence && res.A >= s.MinEffect
	if floor := c.FloorAt(median(stable)); worse && c.Comparison != GrayAtLeast && floor > 0 && sign*res.MedianDelta <= floor {
		worse = false
		res.Note = fmt.Sprintf("significant, but the median difference %s is within the %s floor", FormatDelta(c.Unit, res.MedianDelta), FormatValue(c.Unit, floor))
	}
	res.Verdict = verdictOf(!worse)
	return res
}

// judgeGray tests a gray-only criterion (GrayAtLeast) on the gray samples
// alone: an unpooled stable has no sync.Pool series, and the threshold is
// the gray's, not a comparison. It is a one-sided exact sign test of "the
// gray's median is at least Threshold - floor" (the floor counts below the
// threshold, as in the sequential test): k of the n samples below that
// line give the p-value P(Binomial(n, 1/2) >= k), and the effect A is k/n,
// the share of samples below it.
func (s StatTest) judgeGray(c Criterion, gray []float64, res TestResult) TestResult {
	if len(gray) < s.MinSamples {
		res.Verdict = NoData
		res.Note = fmt.Sprintf("too few gray samples for the test: %d, need %d (the threshold is the gray's own: stable's are not needed)", len(gray), s.MinSamples)
		return res
	}
	line := c.Threshold - c.FloorAt(c.Threshold)
	below := 0
	for _, g := range gray {
		if g < line {
			below++
		}
	}
	res.P = binomialUpperHalf(below, len(gray))
	res.A = float64(below) / float64(len(gray))
	res.MedianDelta = median(gray) - c.Threshold
	res.Verdict = verdictOf(!(res.P < 1-s.Confidence && res.A >= s.MinEffect))
	return res
}

// binomialUpperHalf returns P(X >= k) for X ~ Binomial(n, 1/2), exactly.
func binomialUpperHalf(k, n int) float64 {
	if k <= 0 {
		return 1
	}
	p := 0.0
	for i := k; i <= n; i++ {
		lc, _ := math.Lgamma(float64(n + 1))
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		p += math.Exp(lc - li - lr - float64(n)*math.Ln2)
	}
	return math.Min(p, 1)
}

// ForTests returns s with its confidence raised for k tests at once (the
// Bonferroni correction): with eight SLIs each tested at 99%, one of them
// fails by chance in about 8% of equal windows; at 1 - 0.01/8 each, in at
// most 1%.
func (s StatTest) ForTests(k int) StatTest {
	s = s.withDefaults()
	if k > 1 {
		s.Confidence = 1 - (1-s.Confidence)/float64(k)
	}
	return s
}

// Confirm returns the rows with each threshold FAIL that the statistical
// test did not confirm turned into a PASS with a note: a regression then
// needs the threshold, the floor and significance. A FAIL whose test has
// too few samples becomes NO DATA: the step waits (the cold first step,
// when the gray is youngest, is never failed on the thresholds alone). A
// FAIL whose test failed to run (an error) stays a FAIL.
func Confirm(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		switch {
		case r.Verdict != Fail || r.Test == nil:
		case r.Test.Verdict == Pass:
			r.Verdict = Pass
			r.Note = "over the threshold but not significantly worse (" + r.Test.Summary() + ")"
		case r.Test.Verdict == NoData:
			r.Verdict = NoData
			r.Note = "over the threshold, but the test cannot confirm it yet: " + r.Test.Note
		}
		out[i] = r
	}
	return out
}

func (s StatTest) withDefaults() StatTest { return s.withCatalog(catalog.Default().Stat) }

// withCatalog fills the settings s leaves unset (or out of range) from st.
func (s StatTest) withCatalog(st catalog.Stat) StatTest {
	d := StatTest{Confidence: st.Confidence, MinEffect: st.MinEffect, MinSamples: st.MinSamples}
	if s.Confidence <= 0 || s.Confidence >= 1 {
		s.Confidence = d.Confidence
	}
	if s.MinEffect <= 0 {
		s.MinEffect = d.MinEffect
	}
	if s.MinSamples <= 0 {
		s.MinSamples = d.MinSamples
	}
	return s
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// StatVerdict is the statistical verdict over the rows' tests: NO DATA when
// the tracks are too quiet (quiet != "") or a row has no test result, else
// FAIL when a test fails, else NO DATA when a test had too few samples,
// else PASS.
func StatVerdict(rows []Row, quiet string) (Verdict, []string) {
	if quiet != "" {
		return NoData, []string{quiet}
	}
	var fails, nodata []string
	for _, r := range rows {
		switch {
		case r.Test == nil:
			nodata = append(nodata, r.SLI+": not tested")
		case r.Test.Verdict == Fail:
			fails = append(fails, fmt.Sprintf("%s: gray worse, %s", r.SLI, r.Test.Summary()))
		case r.Test.Verdict != Pass:
			nodata = append(nodata, r.SLI+": "+r.Test.Note)
		}
	}
	switch {
	case len(fails) > 0:
		return Fail, append(fails, nodata...)
	case len(nodata) > 0:
		return NoData, nodata
	case len(rows) == 0:
		return NoData, []string{"no SLI was tested"}
	}
	return Pass, []string{fmt.Sprintf("%d of %d SLIs show no significant regression", len(rows), len(rows))}
}

// Disagreements lists each row where the threshold verdict and the
// statistical verdict are a different PASS or FAIL.
func Disagreements(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if r.Test == nil {
			continue
		}
		t, s := r.Verdict, r.Test.Verdict
		if (t == Pass || t == Fail) && (s == Pass || s == Fail) && t != s {
			out = append(out, fmt.Sprintf("%s: threshold %s, statistical %s (%s)", r.SLI, t, s, r.Test.Summary()))
		}
	}
	return out
}

// fmtEValue formats an e-value to three significant digits, "over 1e308" where it overflowed a
// float64 (the count test's note gives its exponent).
func fmtEValue(e float64) string {
	if math.IsInf(e, 1) {
		return "over 1e308"
	}
	return fmt.Sprintf("%.3g", e)
}

package seqcount

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of Test.
const (
	// DefaultAlpha is Test.Alpha's default: the per-rollout rate of each kind of error.
	DefaultAlpha = 0.01
	// DefaultK is Test.K's default: one SLI.
	DefaultK = 1
	// DefaultMinSteps is Test.MinSteps's default: six steps (1.5-2 minutes) before any verdict.
	DefaultMinSteps = 6
	// DefaultLag is Test.Lag's default: the inflation reads lags 1 to 3.
	DefaultLag = 3
	// tuneSteps is the number of steps in which the prior scale c is tuned to decide an effect of
	// (margin - floor) when the per-step effect alone cannot set it (see the package doc).
	tuneSteps = 10
	// maxSkippedShare is the largest share of steps that may be left out before the judge holds
	// every verdict (NO DATA).
	maxSkippedShare = 0.2
	// maxCount is the largest count or amount a step may carry: larger is garbage (and would
	// overflow the sums of squares).
	maxCount = 1e15
)

// withDefaults returns t with its zero or out-of-range settings replaced by the defaults.
func (t Test) withDefaults() Test {
	if !(t.Alpha > 0 && t.Alpha < 1) {
		t.Alpha = DefaultAlpha
	}
	t.K = max(t.K, DefaultK)
	if t.MinSteps < 2 {
		t.MinSteps = DefaultMinSteps
	}
	if t.Lag < 1 {
		t.Lag = DefaultLag
	}
	if math.IsNaN(t.PodSpread) || math.IsInf(t.PodSpread, 0) {
		t.PodSpread = -1
	}
	return t
}

// errBadLimits is wrapped by the errors of checkLimits; Judge turns them into a NO DATA note.
var errBadLimits = errors.New("bad limits")

// checkLimits reports whether kind and lim can be judged: finite bounds, 1+Rel > 0, and the margin
// beyond the floor (no lower for every stable rate, higher for some).
func checkLimits(kind Kind, lim Limits) error {
	if kind != Proportion && kind != PerRequest {
		return fmt.Errorf("%w: unknown kind %d", errBadLimits, int(kind))
	}
	for _, b := range []Bound{lim.Floor, lim.Margin} {
		if !finite(b.Rel) || !finite(b.Abs) || b.Rel <= -1 {
			return fmt.Errorf("%w: bound %+v is not finite with Rel > -1", errBadLimits, b)
		}
	}
	if !beyond(lim.Margin, lim.Floor) {
		return fmt.Errorf("%w: margin %+v is not beyond floor %+v (a PASS would not rule out a FAIL)", errBadLimits, lim.Margin, lim.Floor)
	}
	return nil
}

// beyond reports whether bound m allows more than bound f: m's rate limit is at least f's at every
// stable rate and above it at some.
func beyond(m, f Bound) bool {
	return m.Rel >= f.Rel && m.Abs >= f.Abs && (m.Rel > f.Rel || m.Abs > f.Abs)
}

// scaled returns b with its whole limit multiplied by s (a relative allowance).
func scaled(b Bound, s float64) Bound {
	return Bound{Rel: (1+b.Rel)*s - 1, Abs: b.Abs * s}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Judge runs the FAIL and the PASS e-processes over steps in order and stops at the first look at
// which either reaches its bar (FAIL first). See the package doc for the statistics.
func (t Test) Judge(kind Kind, lim Limits, steps []Step) Result {
	return t.JudgeAfter(kind, lim, nil, steps)
}

// JudgeAfter is Judge with stable's history: its counts per step (of the steps' length, in time
// order) before the gray started. Their step-to-step variation bounds the variance of the window's
// contrasts from below (package doc, "Stable's history"), and for PerRequest their per-pod counts
// (Counts.Pods), when given, join the window's in the estimate of the pod spread (package doc,
// "Pod offsets"); steps that are not finite, negative or without requests are left out of it.
func (t Test) JudgeAfter(kind Kind, lim Limits, history []Counts, steps []Step) Result {
	return t.JudgeTail(kind, lim, history, steps, nil)
}

// tailWeight is the tail test's share of the FAIL e-process (JudgeTail). The judged bound's
// e-value keeps the rest, so a FAIL on it alone needs 1/(1-tailWeight) = 1.11 times the evidence
// it needed without a tail, and one on the tail alone 1/tailWeight = 10 times.
const tailWeight = 0.1

// JudgeTail is JudgeAfter with a second FAIL test, tail's (LatencyTest's Tail), whose steps are
// the same steps' (tail.Steps[i] is steps[i]'s): the FAIL e-process is the mixture
// (1-tailWeight) E + tailWeight E_tail of the two tests' FAIL e-processes, an e-process under the
// null of both (a gray within the floor, slower than stable by at most the floor's factor
// everywhere), against the larger of their bars; the PASS is the judged bound's alone. A nil tail,
// or one whose limits cannot be judged, is JudgeAfter.
func (t Test) JudgeTail(kind Kind, lim Limits, history []Counts, steps []Step, tail *TailTest) Result {
	t = t.withDefaults()
	res := Result{Bar: float64(t.K) / t.Alpha, EFail: 1, EPass: 1, Inflation: 1, Ratio: math.NaN()}
	if err := checkLimits(kind, lim); err != nil {
		res.Note = "NO DATA: " + err.Error()
		return res
	}
	j := newJudgeTail(t, kind, lim, history, steps, tail)
	for i, st := range steps {
		j.addTail(tail, i)
		if !j.add(st) {
			continue
		}
		if j.look(); j.out == Pass && i+1 < len(steps) {
			return j.watch(history, steps, tail, i)
		} else if j.out != Inconclusive {
			break
		}
	}
	return j.result()
}

// newJudgeTail returns the state of one JudgeTail call: newJudge's, with the tail's FAIL test
// when tail is given and its limits can be judged.
func newJudgeTail(t Test, kind Kind, lim Limits, history []Counts, steps []Step, tail *TailTest) *judge {
	j := newJudge(t, kind, lim, history, steps)
	if tail != nil && checkLimits(kind, tail.Limits) == nil {
		j.tail = newJudge(t, kind, tail.Limits, tail.History, tail.Steps)
		j.tail.failOnly, j.tail.withhold, j.tail.wide, j.tailBound = true, true, true, tail.Bound
	}
	return j
}

// addTail adds the tail's step i to the tail's FAIL test, when there is one.
func (j *judge) addTail(tail *TailTest, i int) {
	if j.tail != nil && i < len(tail.Steps) {
		j.tail.add(tail.Steps[i])
	}
}

// obs is one usable step.
type obs struct {
	t              time.Time
	ng, rg, ns, rs float64
	ps             float64 // stable's smoothed pooled rate over the steps before (this one's for the first)
}

// judge is the state of one Judge call.
type judge struct {
	t        Test
	kind     Kind
	lim      Limits
	obs      []obs
	hist     []Counts // stable's usable history steps (JudgeAfter)
	skips    map[string]int
	seen     int
	pods     podTally
	withhold bool // some step had non-finite counts: never a PASS
	// tail is the tail's FAIL test (JudgeTail), at bound tailBound; failOnly marks such a judge,
	// whose looks only read its FAIL e-value. failBar is the FAIL test's bar at the last look.
	tail      *judge
	tailBound float64
	wide      bool // the tail's judge: its FAIL mixture has a wide part too (tailWideScale)
	failOnly  bool
	failBar   float64
	passable  bool    // a PASS was possible at the last look (boundaries)
	first     int     // a watch's first step in the rollout's steps (watch)
	c, cPass  float64 // the prior scales of the FAIL and the PASS mixture
	temper    float64 // the conditional PASS test's temper at the last look (0: not used)
	// failTemper is the conditional FAIL test's temper at the last look (0: not used), and
	// condFloor its floor: the floor with the pod allowance at Student's t (boundaries)
	failTemper float64
	condFloor  Bound
	coMove     float64 // the tracks' co-movement at the last look (coMovement; 0: not read)
	sumNs      float64 // stable's pooled counts over the usable steps
	sumRs      float64
	// the last look
	out                   Outcome
	logEF, logEP, infl    float64
	bar                   float64
	at                    time.Time
	why, podNote          string
	floorUsed, marginUsed Bound
}

// newJudge returns the state of one Judge call, with stable's usable history steps taken in.
func newJudge(t Test, kind Kind, lim Limits, history []Counts, steps []Step) *judge {
	j := &judge{t: t, kind: kind, lim: lim, skips: map[string]int{}, infl: 1, pods: newPodTally(kind)}
	j.bar = float64(t.K) / t.Alpha
	j.failBar = j.bar
	for _, st := range steps {
		if !allFinite(st.Stable) || !allFinite(st.Gray) {
			j.withhold = true
			break
		}
	}
	for _, h := range history {
		if allFinite(h) && h.Num >= 0 && h.Requests > 0 && max(h.Num, h.Requests) <= maxCount && (kind != Proportion || h.Num <= h.Requests) {
			j.hist = append(j.hist, Counts{Num: h.Num, Requests: h.Requests})
			if kind == PerRequest {
				j.pods.addHistory(h)
			}
		}
	}
	return j
}

func allFinite(c Counts) bool { return finite(c.Num) && finite(c.Requests) }

// skipCause returns why a step cannot be used, or "".
func skipCause(kind Kind, st Step) string {
	s, g := st.Stable, st.Gray
	switch {
	case !allFinite(s) || !allFinite(g):
		return "non-finite counts"
	case s.Num < 0 || s.Requests < 0 || g.Num < 0 || g.Requests < 0:
		return "negative counts"
	case max(s.Num, s.Requests, g.Num, g.Requests) > maxCount:
		return "counts above 1e15 (implausible for one step)"
	case kind == Proportion && (s.Num > s.Requests || g.Num > g.Requests):
		return "Num above Requests"
	case s.Requests == 0 || g.Requests == 0:
		return "no requests on a track"
	}
	return ""
}

// add takes one step; it reports whether the step was usable.
func (j *judge) add(st Step) bool {
	j.seen++
	if cause := skipCause(j.kind, st); cause != "" {
		j.skips[cause]++
		return false
	}
	ps := smoothRate(j.sumNs, j.sumRs)
	if len(j.obs) == 0 {
		ps = smoothRate(st.Stable.Num, st.Stable.Requests)
	}
	j.sumNs += st.Stable.Num
	j.sumRs += st.Stable.Requests
	j.obs = append(j.obs, obs{t: st.T, ng: st.Gray.Num, rg: st.Gray.Requests, ns: st.Stable.Num, rs: st.Stable.Requests, ps: ps})
	j.pods.add(st)
	return true
}

// smoothRate is num/req with half a count of prior, so that no events is not a zero rate.
func smoothRate(num, req float64) float64 { return (num + 0.5) / (req + 1) }

func (j *judge) skipped() int {
	n := 0
	for _, v := range j.skips {
		n += v
	}
	return n
}

// logSumExp returns log(e^a + e^b) without overflow.
func logSumExp(a, b float64) float64 {
	m := max(a, b)
	if math.IsInf(m, -1) {
		return m
	}
	return m + math.Log(math.Exp(a-m)+math.Exp(b-m))
}

// logSumExpAll returns log(sum e^t) over ts without overflow, NaN terms counted as e^-Inf (0):
// -Inf when every term is.
func logSumExpAll(ts []float64) float64 {
	best := math.Inf(-1)
	for _, t := range ts {
		if !math.IsNaN(t) {
			best = math.Max(best, t)
		}
	}
	if math.IsInf(best, 0) {
		return best
	}
	var sum float64
	for _, t := range ts {
		if !math.IsNaN(t) {
			sum += math.Exp(t - best)
		}
	}
	return best + math.Log(sum)
}

package seqcount

import (
	"math"
	"slices"
)

// eventsMinRatio is the margin's ratio of gray's rate to stable's, 1 + Margin.Rel with no
// Margin.Abs, from which a Proportion SLI's PASS test conditions on the steps' events
// (logEventsPass; package doc, "Rare events").
const eventsMinRatio = 2

// eventsGrid is the number of alternatives each conditional test mixes.
const eventsGrid = 20

// eventsFailReach is the largest alternative of the conditional FAIL test, as a multiple of the
// floor's ratio.
const eventsFailReach = 4

// eventsFailWeight is the conditional FAIL test's share of a pure-ratio floor's FAIL e-process
// (logEventsFail; package doc, "Rare events"): a FAIL on it alone needs 1/eventsFailWeight = 10
// times the evidence, one on the unconditional test alone 1/(1-eventsFailWeight) = 1.11 times.
const eventsFailWeight = 0.1

// eventsFailTrimEvery sets how many steps the conditional FAIL test leaves out of each
// alternative's evidence: the largest positive step terms, one per eventsFailTrimEvery steps
// completed (none before the 50th step, 16 minutes 40 seconds at 20 s). A track that stalls for
// a step (a third of its requests slowed for seconds, in one step of a hundred in the count
// evaluation's corpus model) gives one step a likelihood ratio no drift explains; a real
// regression is in every step, and loses only a step's share. Over a window's first steps the
// gate keeps such a step out (coMovement, TestCoMovement): with no drift the tracks share, their
// step changes co-move by chance in about one 3-minute window in eight, stall or not, and in
// almost none by the 49th step; a shared drift opens it, and one track's stall shuts about a
// third of the windows it opens. Measured, the corpus model's A/A rollouts FAIL 0 of 400 with no
// step left out there, as with one, while a step left out from the first costs a regression a
// look (the shared drift's p99 +40% median 3.33 minutes against 3).
const eventsFailTrimEvery = 50

// condFail reports whether the FAIL test of a Proportion SLI with floor f may mix in the
// conditional one: a floor that is a pure ratio of stable's rate. It does where the tracks'
// step changes co-move (coMovement at least coMoveMin).
func condFail(f Bound) bool { return f.Abs == 0 }

// rareEvents reports whether the PASS test of a Proportion SLI with margin m is the conditional
// one: a margin that is a pure ratio of stable's rate, at least eventsMinRatio.
func rareEvents(m Bound) bool { return m.Abs == 0 && 1+m.Rel >= eventsMinRatio }

// logEventsPass returns log E of the PASS test that conditions on each step's events: given the
// step's n = N_g + N_s events, a gray whose rate is rho times stable's has N_g ~ Binomial(n,
// pi(rho)), pi(rho) = rho R_g/(rho R_g + R_s), whatever rate the two tracks share in the step.
// Against the null rho >= rho_M = 1 + m.Rel, each alternative rho_1 < rho_M gives the likelihood
// ratio prod_i (pi(rho_1)/pi(rho_M))^N_g,i ((1-pi(rho_1))/(1-pi(rho_M)))^N_s,i, which is largest
// at rho_M over the null (the binomial's likelihood ratio is monotone), so a test supermartingale
// under it; the test is the mean of eventsGrid of them, rho_1 = rho_M e^-u for u in
// log(rho_M) (k/(eventsGrid/2)), k = 1..eventsGrid (gray at parity is k = eventsGrid/2), each
// raised to the power 1/temper (temper >= 1: a supermartingale still, by Jensen's inequality,
// and the right one for counts whose variance is temper times the model's).
func (j *judge) logEventsPass(m Bound, temper float64) float64 {
	top := math.Log(1 + m.Rel)
	return j.logEvents(1+m.Rel, -1, func(k int) float64 { return top * float64(k+1) / (eventsGrid / 2) }, temper, 0)
}

// logEventsFail returns log E of the FAIL test that conditions on each step's events: against the
// null rho <= rho_F = 1 + f.Rel, the alternatives rho_1 = rho_F e^u for u in
// log(eventsFailReach) k/eventsGrid, k = 1..eventsGrid, each likelihood ratio (increasing in N_g,
// so largest at rho_F over the null) raised to 1/temper and the eventsGrid of them averaged
// (package doc, "Rare events").
func (j *judge) logEventsFail(f Bound, temper float64) float64 {
	top := math.Log(eventsFailReach)
	return j.logEvents(1+f.Rel, 1, func(k int) float64 { return top * float64(k+1) / eventsGrid }, temper, len(j.obs)/eventsFailTrimEvery)
}

// logEvents is logEventsPass (sign -1) and logEventsFail (sign +1): the mean over the eventsGrid
// alternatives rho e^(sign u_k) of the steps' conditional likelihood ratios against rho, each to
// the power 1/temper. A step's log likelihood ratio is sign u N_g - n log(1 + pi (e^(sign u) -
// 1)), pi = rho R_g/(rho R_g + R_s): log1p keeps its precision when pi is near 0, e^(sign u) - 1
// is computed once per alternative, and pi is written so that no product overflows.
func (j *judge) logEvents(rho, sign float64, u func(k int) float64, temper float64, trim int) float64 {
	var terms [eventsGrid]float64
	top := make([]float64, trim) // the largest positive step terms, in decreasing order
	for k := range terms {
		su := sign * u(k)
		em1 := math.Expm1(su)
		var l float64
		clear(top)
		for _, o := range j.obs {
			if n := o.ng + o.ns; n > 0 {
				x := o.ng*su - n*math.Log1p(em1/(1+o.rs/(rho*o.rg)))
				l += x
				keepLargest(top, x)
			}
		}
		for _, x := range top {
			l -= x
		}
		terms[k] = l/temper - math.Log(eventsGrid)
	}
	return logSumExpAll(terms[:])
}

// keepLargest inserts x into top, the largest positive values seen in decreasing order (0 where
// there are fewer), when it is larger than the smallest of them.
func keepLargest(top []float64, x float64) {
	for i := range top {
		if x > top[i] {
			copy(top[i+1:], top[i:])
			top[i] = x
			return
		}
	}
}

// eventsTemper returns the power 1/temper logEventsPass raises its likelihood ratios to: the
// variance of the steps' gray counts about their conditional binomial beyond the binomial's own,
// read as the other tests read theirs, but in the conditional model, where a drift or a burst the
// tracks share is no noise. With rho the pooled ratio of gray's rate to stable's (half an event of
// prior on each), pi_i = rho R_g/(rho R_g + R_s) and n_i a step's events, the residuals e_i = N_g
// - n_i pi_i give the dispersion D = m/(m-1) sum e_i^2 / sum n_i pi_i (1 - pi_i) over the m steps
// with events (1 below two such steps) and their inflation (autocorrelations at lags 1..lag, as
// the other tests'): temper = max(1, D) x inflation. A track's own drift or bursts show in both.
func (j *judge) eventsTemper() float64 {
	d, resid := j.eventsDispersion()
	return capTemper(d * inflation(resid, j.t.Lag))
}

// eventsDispersion returns eventsTemper's dispersion D and the residuals e_i (0 for a step
// without events).
func (j *judge) eventsDispersion() (float64, []float64) {
	ng, rg, ns, rs := j.pooled()
	rho := (ng + 0.5) / rg / ((ns + 0.5) / rs)
	resid := make([]float64, len(j.obs))
	var sum2, v float64
	m := 0
	for i, o := range j.obs {
		n := o.ng + o.ns
		if n == 0 {
			continue
		}
		pi := rho * o.rg / (rho*o.rg + o.rs)
		resid[i] = o.ng - n*pi
		sum2 += resid[i] * resid[i]
		v += n * pi * (1 - pi)
		m++
	}
	d := 1.0
	if m >= 2 && v > 0 {
		d = math.Max(1, sum2*float64(m)/float64(m-1)/v)
	}
	return d, resid
}

// eventsFailTemper returns the temper of the conditional FAIL test (logEventsFail): eventsTemper's
// dispersion D times the residuals' long-run variance factor, read to more lags than the other
// tests' and corrected for the mean the residuals are taken about (longRunFactor), times
// estimateFactor for the few independent steps it rests on at the bar its share of the FAIL test
// must reach alone (the bar over eventsFailWeight). A track's own
// drift shows in the residuals only as slowly as it wanders, and over the few steps of a
// rollout's first minutes it looks like binomial noise; the factors charge for that.
func (j *judge) eventsFailTemper() float64 {
	d, resid := j.eventsDispersion()
	f := longRunFactor(resid)
	return capTemper(d * f * estimateFactor(float64(len(resid))/f, math.Log(j.bar/eventsFailWeight)))
}

// capTemper returns t, or +Inf when it is not finite (a temper of +Inf makes the e-value 1).
func capTemper(t float64) float64 {
	if !finite(t) {
		return math.Inf(1)
	}
	return t
}

// longRunFactor returns lrv/g(0) of the series xs (at least 1), its long-run variance over its
// variance, with lags up to L = min(n-1, n/3, maxDriftLag) under Bartlett weights and each
// autocovariance raised by lrv/n, the bias of taking them about the series' own mean (as driftSum
// corrects stable's). 1 with fewer than two values or no variation.
func longRunFactor(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return 1
	}
	g, _, bias := longRunVar(centre(slices.Clone(xs)), n-1)
	if !(g[0] > 0) || math.IsInf(g[0], 0) {
		return 1
	}
	corr := g[0] + bias
	for k := 1; k < len(g); k++ {
		corr += 2 * (1 - float64(k)/float64(len(g))) * (g[k] + bias)
	}
	return math.Max(1, corr/g[0])
}

// coMoveMin is the least coMovement at which the FAIL test mixes in the conditional one: a
// drift both tracks share is what the unconditional test must charge as noise (stable's history
// shows it) and the conditional one cancels; each track's own drift looks like binomial noise to
// the conditional test over a window's first minutes, and there the unconditional one is kept
// alone.
const coMoveMin = 0.5

// coMovement returns the correlation of the two tracks' step-to-step changes of log rate over the
// window (half an event of prior on each count), 0 below four changes: a drift the tracks share
// moves both, each track's own moves one.
func (j *judge) coMovement() float64 {
	if len(j.obs) < 5 {
		return 0
	}
	var dg, ds []float64
	for i := 1; i < len(j.obs); i++ {
		a, b := j.obs[i-1], j.obs[i]
		dg = append(dg, math.Log((b.ng+0.5)/b.rg)-math.Log((a.ng+0.5)/a.rg))
		ds = append(ds, math.Log((b.ns+0.5)/b.rs)-math.Log((a.ns+0.5)/a.rs))
	}
	centre(dg)
	centre(ds)
	vg, vs := crossCov(dg, dg, 0), crossCov(ds, ds, 0)
	if !(vg > 0 && vs > 0) {
		return 0
	}
	return crossCov(dg, ds, 0) / math.Sqrt(vg*vs)
}

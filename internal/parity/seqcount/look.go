package seqcount

import (
	"fmt"
	"math"
)

// look judges the usable steps so far: it sets j.out when an e-value reaches its bar, and keeps
// the e-values, the inflation and why no verdict was reached for the result. The FAIL e-process is
// the watched one (watchedLogEF): before any PASS its FAIL test holds 1-watchWeight of it.
func (j *judge) look() {
	if !j.evidence() || j.failOnly {
		return
	}
	passable := j.passable
	switch {
	case watchedLogEF(j.logEF) >= math.Log(j.failBar):
		j.out = Fail
	case passable && j.logEP >= math.Log(j.bar) && !j.tailHolds():
		j.out = Pass
	default:
		j.why = ""
		if passable && j.logEP >= math.Log(j.bar) {
			j.why = fmt.Sprintf("the PASS is held: the tail's FAIL e-value %s is at least %g (package doc, \"The tail\")", fmtE(j.tail.logEF, 3), float64(tailHoldE))
		}
		return
	}
	j.at = j.obs[len(j.obs)-1].t
}

// tailWideScale and tailWideWeight: the tail's FAIL test is the mixture of its prior tuned at the
// floor (weight 1-tailWideWeight) and one tailWideScale times as wide.
const (
	tailWideScale  = 4
	tailWideWeight = 0.5
)

// tailHoldE is the tail's FAIL e-value that holds a PASS (package doc, "The tail"): a PASS at the
// judged bound says nothing of the requests beyond the tail's bound, so it waits while the tail's
// own FAIL test has evidence of a shift there. Under the null the tail's FAIL e-process reaches
// it with chance at most 1/tailHoldE (Ville), so at parity a PASS is seldom held; a hold only
// delays a PASS, so the PASS test's guarantee stands.
const tailHoldE = 2

// tailHolds reports whether the tail's FAIL test holds a PASS.
func (j *judge) tailHolds() bool { return j.tail != nil && j.tail.logEF >= math.Log(tailHoldE) }

// evidence computes the e-values of the usable steps so far (the tail's mixed into the FAIL
// e-value), the inflation, the boundaries and the bars; false, with j.why set, when the steps
// cannot be judged yet.
func (j *judge) evidence() bool {
	n := len(j.obs)
	if n < j.t.MinSteps {
		j.why = fmt.Sprintf("%d usable steps, fewer than MinSteps %d", n, j.t.MinSteps)
		return false
	}
	if float64(j.skipped()) > maxSkippedShare*float64(j.seen) {
		j.why = fmt.Sprintf("%d of %d steps left out, more than a fifth", j.skipped(), j.seen)
		return false
	}
	floor, margin, passable := j.boundaries()
	j.passable = passable
	xs := j.contrasts(j.lim.Floor)
	for _, x := range xs {
		if !finite(x) || math.Abs(x) > 1e150 {
			j.why = "the contrast overflows: counts or limits out of any sane scale"
			return false
		}
	}
	j.infl = inflation(xs, j.t.Lag)
	f := j.sums(floor)
	if j.kind == PerRequest && !(f.emp > 0) {
		j.why = "no variation: every step's contrast is the same, so nothing measures its noise"
		return false
	}
	if j.c == 0 {
		j.c = j.priorScale(j.lim.Floor, failTarget(j.lim), j.lim.Floor)
		j.cPass = j.priorScale(Bound{}, j.lim.Margin, j.lim.Margin)
	}
	drift, shared := j.drift()
	dv := driftFactor(floor, shared) * drift
	if j.kind == Proportion {
		k := j.infl * math.Max(1, f.disp)
		cum := func(l float64) float64 {
			return math.Max(k*(f.gray*poissonUp(l)+f.stable*l*l/2), dv*l*l/2)
		}
		j.logEF = logMixtureCum(f.s, j.c, cum)
		if j.wide {
			// The tail's FAIL test mixes in a prior tailWideScale times as wide: a tail-only
			// regression moves the few requests beyond the tail's bound by several times, an
			// effect the prior tuned at the floor weighs little (package doc, "The tail").
			j.logEF = logSumExp(math.Log1p(-tailWideWeight)+j.logEF, math.Log(tailWideWeight)+logMixtureCum(f.s, tailWideScale*j.c, cum))
		}
	} else {
		j.logEF = logMixtureE(f.s, max(j.infl*f.emp, dv), j.c)
	}
	j.failTemper, j.coMove = 0, 0
	if j.kind == Proportion && condFail(floor) {
		j.coMove = j.coMovement()
	}
	if j.coMove >= coMoveMin {
		j.failTemper = j.eventsFailTemper()
		j.logEF = logSumExp(math.Log1p(-eventsFailWeight)+j.logEF, math.Log(eventsFailWeight)+j.logEventsFail(j.condFloor, j.failTemper))
	}
	j.logEP, j.temper = 0, 0
	if passable {
		p := j.sums(margin)
		dvPass := driftFactor(margin, shared) * drift
		switch {
		case j.kind == Proportion && rareEvents(margin):
			j.temper = j.eventsTemper()
			j.logEP = j.logEventsPass(margin, j.temper)
		case j.kind == Proportion:
			j.logEP = logMixtureCum(-p.s, j.cPass, func(l float64) float64 {
				return math.Max(j.infl*max(p.gray*poissonDown(l)+p.stable*jumpCum(l, p.jump), p.emp*l*l/2), dvPass*l*l/2)
			})
		default:
			j.logEP = logMixtureE(-p.s, max(j.infl*p.emp, dvPass), j.cPass)
		}
	}
	j.floorUsed, j.marginUsed = floor, margin
	j.failBar = j.bar
	if j.tail != nil {
		j.tail.look()
		j.logEF = logSumExp(math.Log1p(-tailWeight)+j.logEF, math.Log(tailWeight)+j.tail.logEF)
		j.failBar = max(j.bar, j.tail.bar)
	}
	return true
}

// boundaries returns the floor and margin after the pod-offset allowance (package doc) and whether
// a PASS is possible at all; it sets j.bar and j.podNote.
func (j *judge) boundaries() (floor, margin Bound, passable bool) {
	spread, df, src := j.t.PodSpread, 0, "given"
	if spread <= 0 {
		spread, df, src = j.pods.spread()
	}
	floor, margin = j.lim.Floor, j.lim.Margin
	j.condFloor = floor
	j.bar = float64(j.t.K) / j.t.Alpha
	j.podNote = "pod offsets: " + src
	if spread > 0 {
		pg, ps := j.pods.counts()
		tail := j.t.Alpha / (2 * float64(j.t.K))
		q, est := zUpper(tail), "known"
		switch {
		case df > 0 && j.kind == PerRequest:
			q = tUpper(tail, df)
			est = fmt.Sprintf("%d degrees of freedom, Student's t %.3g", df, q)
		case df > 0:
			est = fmt.Sprintf("%d degrees of freedom, the normal's %.3g", df, q)
		}
		se := spread * math.Sqrt(1/float64(pg)+1/float64(ps)) // sd of the gray-stable difference of mean pod offsets
		a := q * se
		floor, margin = scaled(floor, math.Exp(a)), scaled(margin, math.Exp(-a))
		j.condFloor = floor
		if df > 0 && j.kind == Proportion {
			j.condFloor = scaled(j.lim.Floor, math.Exp(tUpper(tail, df)*se))
		}
		j.bar *= 2
		j.podNote = fmt.Sprintf("pod offsets: sd %.3g (%s; %s) over %d gray and %d stable pods, allowance x%.4g on the limits, half of alpha spent on it",
			spread, src, est, pg, ps, math.Exp(a))
	}
	passable = !j.withhold
	if rate := j.sumNs / j.sumRs; !(limitAt(margin, rate) > limitAt(floor, rate)) {
		passable = false
		j.podNote += "; PASS impossible: the margin narrowed by the allowance is not beyond the widened floor at stable's rate"
	}
	return floor, margin, passable
}

// failTarget returns the effect the FAIL test's prior is tuned to see (priorScale): the margin,
// or twice the floor where the margin is nearer the floor than the floor is to parity. A margin
// barely beyond the floor (the catalog's latency limits just above the 50 ms where its 5 ms floor
// meets the 1.10 margin) would tune the prior to an effect too small to matter, and its FAIL test
// would then need long to see any regression (package doc, "The e-process").
func failTarget(lim Limits) Bound {
	return Bound{Rel: max(lim.Margin.Rel, 2*lim.Floor.Rel), Abs: max(lim.Margin.Abs, 2*lim.Floor.Abs)}
}

// limitAt returns bound b's limit on gray's rate at stable's rate r.
func limitAt(b Bound, r float64) float64 { return r*(1+b.Rel) + b.Abs }

// contrasts returns x_i(b) of the usable steps.
func (j *judge) contrasts(b Bound) []float64 {
	xs := make([]float64, len(j.obs))
	for i, o := range j.obs {
		xs[i] = o.ng - o.rg*limitAt(b, o.ns/o.rs)
	}
	return xs
}

// sum is what a look reads of the contrasts x_i(b) of one boundary b.
type sum struct {
	s float64 // S = sum x_i(b)
	// gray and stable are the model variance of S at b (Proportion; 0 for PerRequest), split into
	// gray's binomial part, bounded by its Poisson proxy sum R_g p_g, and stable's
	gray, stable float64
	emp          float64 // the contrasts' empirical variance about their mean, n/(n-1) sum (x_i - mean)^2
	disp         float64 // Proportion: the dispersion D beyond the binomial (package doc, "The variance")
	jump         float64 // Proportion: the largest weight of one stable event in x_i(b), R_g (1+Rel)/R_s
}

// sums returns the contrasts' sum, variances and dispersion at the boundary b.
func (j *judge) sums(b Bound) sum {
	xs := j.contrasts(b)
	n := float64(len(xs))
	var m sum
	var rg, ng float64
	for i, x := range xs {
		m.s += x
		rg += j.obs[i].rg
		ng += j.obs[i].ng
	}
	mean := m.s / n
	for _, x := range xs {
		m.emp += (x - mean) * (x - mean)
	}
	m.emp *= n / (n - 1)
	if j.kind != Proportion {
		return m
	}
	// D: the residuals about gray's fitted effect d per request over the model variance at
	// gray's observed rate.
	d, pg := m.s/rg, smoothRate(ng, rg)
	var fitted, resid float64
	for i, x := range xs {
		o := j.obs[i]
		g, st := varParts(o, b, limitAt(b, o.ps))
		m.gray, m.stable = m.gray+g, m.stable+st
		m.jump = math.Max(m.jump, o.rg*(1+b.Rel)/o.rs)
		g, st = varParts(o, b, pg)
		fitted += g + st
		e := x - o.rg*d
		resid += e * e
	}
	m.disp = resid * n / (n - 1) / fitted
	return m
}

// varParts returns the variance of a Proportion step's contrast x(b) when gray's rate is pg
// (clipped to [0, 1]): gray's part R_g pg, the Poisson proxy that bounds its binomial cumulants
// (package doc), and stable's, (R_g (1+Rel))^2 p_s (1-p_s)/R_s.
func varParts(o obs, b Bound, pg float64) (gray, stable float64) {
	pg = math.Min(math.Max(pg, 0), 1)
	k := o.rg * (1 + b.Rel)
	return o.rg * pg, k * k * o.ps * (1 - o.ps) / o.rs
}

// priorScale returns c, the prior scale of lambda, tuned so that an effect of (to - from) is the
// one the mixture weighs most, with the variance of a step at the test's null (package doc): the
// FAIL test's effect from floor to margin, its null the floor; the PASS test's from parity to
// margin, its null the margin. For the FAIL test of a Proportion SLI, whose gray counts enter at
// their Poisson cumulant, c is the lambda that cumulant bound's own likelihood picks for the
// effect (cumRoot), log(1 + d/p) for gray's part alone; the normal's d/p is twice as large at
// errors +0.5 points (p 0.002, d 0.004), and the mixture then weighs lambdas no gray at that
// effect reaches (package doc, "The e-process").
func (j *judge) priorScale(from, to, null Bound) float64 {
	first := j.obs[:min(len(j.obs), j.t.MinSteps)]
	var rg, ns, rs float64
	for _, o := range first {
		rg += o.rg
		ns += o.ns
		rs += o.rs
	}
	var vRef, rate, g, st float64
	if j.kind == Proportion {
		rate, rg = first[0].ps, first[0].rg
		g, st = varParts(first[0], null, limitAt(null, rate))
		vRef = g + st
	} else {
		vRef, rate, rg = j.sums(null).emp/float64(len(j.obs)), ns/rs, rg/float64(len(first))
	}
	d := rate*(to.Rel-from.Rel) + (to.Abs - from.Abs)
	c := rg * d / vRef
	if j.kind == Proportion && null == from && c > 0 && !math.IsInf(c, 0) {
		c = cumRoot(rg*d, g, st)
	}
	if !(c > 0) || math.IsInf(c, 0) {
		c = math.Sqrt(2 * math.Log(j.bar) / (tuneSteps * vRef))
	}
	return c
}

// inflation returns the Bartlett-weighted long-run variance factor of xs over lags 1..lag,
// max(1, 1 + 2 sum_k (1 - k/(lag+1)) rho_k), each rho_k clipped to [0, 0.95].
func inflation(xs []float64, lag int) float64 {
	var scale float64
	for _, x := range xs {
		scale = math.Max(scale, math.Abs(x))
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return 1
	}
	c := centre(divided(xs, scale)) // correlations are scale-free; this keeps the squares finite
	g0 := crossCov(c, c, 0)
	if !(g0 > 0) {
		return 1
	}
	f := 1.0
	for k := 1; k <= lag && k < len(c); k++ {
		rho := math.Min(math.Max(crossCov(c, c, k)/g0, 0), 0.95)
		f += 2 * (1 - float64(k)/float64(lag+1)) * rho
	}
	return f
}

// divided returns a new slice of each of xs divided by k; xs is left as it is.
func divided(xs []float64, k float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / k
	}
	return out
}

// drift returns driftSum over stable's history and the window's stable steps, at the bar that
// boundaries set, and the share of it that gray's steps show to be shared (sharedShare); 0, 0
// without history.
func (j *judge) drift() (sum, shared float64) {
	if len(j.hist) == 0 {
		return 0, 0
	}
	n := len(j.obs)
	num := make([]float64, 0, len(j.hist)+n)
	req := make([]float64, 0, cap(num))
	for _, h := range j.hist {
		num, req = append(num, h.Num), append(req, h.Requests)
	}
	ng, rg, ns, rs := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	var mg float64
	for i, o := range j.obs {
		num, req = append(num, o.ns), append(req, o.rs)
		ng[i], rg[i], ns[i], rs[i] = o.ng, o.rg, o.ns, o.rs
		mg += o.rg / float64(n)
	}
	v, oneStep := driftSum(num, req, n, mg, math.Log(j.bar))
	return v, sharedShare(ng, rg, ns, rs, oneStep)
}

// cumRoot returns the lambda > 0 at which the FAIL test's cumulant bound per step,
// g (e^l - 1 - l) + st l^2/2, has slope e (g (e^l - 1) + st l = e): the lambda that maximises
// l e - cum(l), the evidence per step of a gray whose contrast has mean e. It is found by
// bisection, for e > 0 and g, st >= 0 not both 0.
func cumRoot(e, g, st float64) float64 {
	return crossing(func(l float64) bool { return g*math.Expm1(l)+st*l < e }, 0, 1, 700, 100)
}

package seqcount

import "math"

// eventsMinRatio is the margin's ratio of gray's rate to stable's, 1 + Margin.Rel with no
// Margin.Abs, from which a Proportion SLI's PASS test conditions on the steps' events
// (logEventsPass; package doc, "Rare events").
const eventsMinRatio = 2

// eventsGrid is the number of alternatives the conditional PASS test mixes.
const eventsGrid = 20

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
	rho := 1 + m.Rel
	top := math.Log(rho)
	// A step's log likelihood ratio is -u N_g - n log(1 + pi_M (e^-u - 1)), pi_M = pi(rho_M):
	// log1p keeps its precision when pi_M is near 0, e^-u - 1 is computed once per alternative,
	// and pi_M is written so that no product overflows.
	var terms [eventsGrid]float64
	for k := range terms {
		u := top * float64(k+1) / (eventsGrid / 2)
		em1 := math.Expm1(-u)
		var l float64
		for _, o := range j.obs {
			if n := o.ng + o.ns; n > 0 {
				l -= o.ng*u + n*math.Log1p(em1/(1+o.rs/(rho*o.rg)))
			}
		}
		terms[k] = l/temper - math.Log(eventsGrid)
	}
	return logSumExpAll(terms[:])
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
	t := d * inflation(resid, j.t.Lag)
	if !finite(t) {
		return math.Inf(1)
	}
	return t
}

package seqcount

import "math"

// logMixtureE returns log E of the one-sided normal mixture over lambda >= 0 with a half-normal
// prior of scale c, for the sum s and variance v of the contrasts (package doc):
//
//	E = 2 (1 + c^2 v)^(-1/2) exp(s^2/(2a)) Phi(s/sqrt(a)),   a = v + 1/c^2.
//
// It is 0 (E = 1) when v or c is not a positive finite number.
func logMixtureE(s, v, c float64) float64 {
	if !(v > 0) || !(c > 0) || math.IsInf(v, 0) || math.IsInf(c, 0) || math.IsNaN(s) {
		return 0
	}
	a := v + 1/(c*c)
	z := s / math.Sqrt(a)
	return math.Ln2 - 0.5*math.Log1p(c*c*v) + z*z/2 + logPhi(z)
}

// logBennettE returns log E of the FAIL test of a Proportion SLI: a mixture over lambda >= 0,
// on a grid of bennettGrid points weighted as the half-normal prior of scale c (normalised, so
// exactly a mixture of supermartingales), of
//
//	exp(lambda s - max(gray (e^lambda - 1 - lambda) + stable lambda^2/2, drift lambda^2/2)):
//
// gray's counts enter with their Poisson cumulants, whose upper tail is heavier than a normal's
// (package doc, "The variance"). 0 (E = 1) when the variances or c are not usable.
func logBennettE(s, gray, stable, drift, c float64) float64 {
	if !(c > 0) || math.IsInf(c, 0) || math.IsNaN(s) || !(gray >= 0) || !(stable >= 0) || !(drift >= 0) ||
		math.IsInf(gray+stable+drift, 0) || !(gray+stable+drift > 0) {
		return 0
	}
	w := bennettWeights()
	best, terms := math.Inf(-1), make([]float64, len(w))
	for k := range w {
		l := c * bennettStep * (float64(k) + 0.5)
		psi := math.Expm1(l) - l
		cum := math.Max(gray*psi+stable*l*l/2, drift*l*l/2)
		terms[k] = math.Log(w[k]) + l*s - cum
		if math.IsNaN(terms[k]) {
			terms[k] = math.Inf(-1)
		}
		best = math.Max(best, terms[k])
	}
	if math.IsInf(best, -1) {
		return math.Inf(-1)
	}
	var sum float64
	for _, t := range terms {
		sum += math.Exp(t - best)
	}
	return best + math.Log(sum)
}

// The grid of logBennettE: bennettGrid points of lambda/c, bennettStep apart from bennettStep/2,
// so up to 6 prior sds.
const (
	bennettGrid = 40
	bennettStep = 0.15
)

// bennettWeights returns the half-normal prior's weights at the grid's points, summing to 1.
func bennettWeights() []float64 {
	w := make([]float64, bennettGrid)
	var tot float64
	for k := range w {
		u := bennettStep * (float64(k) + 0.5)
		w[k] = math.Exp(-u * u / 2)
		tot += w[k]
	}
	for k := range w {
		w[k] /= tot
	}
	return w
}

// logPhi returns log Phi(z) of the standard normal distribution function, with the tail's
// asymptotic series where Erfc underflows.
func logPhi(z float64) float64 {
	if z > -30 {
		return math.Log(0.5 * math.Erfc(-z/math.Sqrt2))
	}
	// Phi(z) ~ phi(z)/|z| (1 - 1/z^2 + 3/z^4) for z -> -inf.
	z2 := z * z
	return -z2/2 - math.Log(-z) - 0.5*math.Log(2*math.Pi) + math.Log1p(-1/z2+3/(z2*z2))
}

// zUpper returns the standard normal quantile z with P(Z > z) = p, for 0 < p < 1, by bisection on
// Erfc (no table; accurate to about 1e-12).
func zUpper(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(mid/math.Sqrt2) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

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

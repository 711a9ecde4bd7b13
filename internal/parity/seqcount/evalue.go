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

// logMixtureCum returns log E of a mixture over lambda >= 0, on a grid of cumGrid points weighted
// as the half-normal prior of scale c (normalised, so exactly a mixture of supermartingales), of
// exp(lambda s - cum(lambda)), cum an upper bound of the cumulant generating function of the sum
// s under the test's null (package doc, "The variance"). 0 (E = 1) when s or c is not usable.
func logMixtureCum(s, c float64, cum func(lambda float64) float64) float64 {
	if !(c > 0) || math.IsInf(c, 0) || math.IsNaN(s) {
		return 0
	}
	var terms [cumGrid]float64
	for k, lw := range cumLogWeights {
		l := c * cumStep * (float64(k) + 0.5)
		terms[k] = lw + l*s - cum(l)
	}
	return logSumExpAll(terms[:])
}

// poissonUp and poissonDown are the cumulants per unit of mean of a Poisson count's upper and
// lower deviations, e^l - 1 - l and e^-l - 1 + l: the first above l^2/2 (a heavier upper tail
// than a normal's), the second below it.
func poissonUp(l float64) float64   { return math.Expm1(l) - l }
func poissonDown(l float64) float64 { return math.Expm1(-l) + l }

// jumpCum is the cumulant per unit of variance of a sum of Poisson events of size h, read upward:
// (e^(l h) - 1 - l h)/h^2, l^2/2 as h goes to 0.
func jumpCum(l, h float64) float64 {
	if !(h > 1e-9) {
		return l * l / 2
	}
	return poissonUp(l*h) / (h * h)
}

// The grid of logMixtureCum: cumGrid points of lambda/c, cumStep apart from cumStep/2, so up to 6
// prior sds.
const (
	cumGrid = 40
	cumStep = 0.15
)

// cumLogWeights holds the logs of the half-normal prior's weights at the grid's points, the
// weights summing to 1. It is computed once, when the package loads, and only read after that.
var cumLogWeights = func() (lw [cumGrid]float64) {
	var tot float64
	for k := range lw {
		u := cumStep * (float64(k) + 0.5)
		lw[k] = -u * u / 2
		tot += math.Exp(lw[k])
	}
	for k := range lw {
		lw[k] -= math.Log(tot)
	}
	return lw
}()

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
	return crossing(func(z float64) bool { return 0.5*math.Erfc(z/math.Sqrt2) > p }, -40, 40, 40, 200)
}

// crossing returns where below, a predicate true up to a point and false beyond it, turns false,
// given below(lo): while below(hi) and hi < limit, the bracket moves up (lo to hi, hi doubled),
// then it is halved n times and its midpoint returned. zUpper, tUpper and cumRoot solve by it.
func crossing(below func(float64) bool, lo, hi, limit float64, n int) float64 {
	for below(hi) && hi < limit {
		lo, hi = hi, 2*hi
	}
	for range n {
		if mid := (lo + hi) / 2; below(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tUpper returns the quantile t of Student's t with df >= 1 degrees of freedom with P(T > t) = p,
// for 0 < p < 1/2, by bisection on the exact finite series of its distribution function for an
// integer df (Abramowitz and Stegun 26.7.3 and 26.7.4).
func tUpper(p float64, df int) float64 {
	df = max(df, 1)
	return crossing(func(t float64) bool { return tTail(t, df) > p }, 0, 1, 1e12, 200)
}

// tTail returns P(T > t) for t >= 0 and Student's t with df >= 1 degrees of freedom.
func tTail(t float64, df int) float64 {
	th := math.Atan(t / math.Sqrt(float64(df)))
	s, c2 := math.Sin(th), math.Cos(th)*math.Cos(th)
	// series sums 1 + c2 (k0-1)/k0 + c2^2 (k0-1)(k0+1)/(k0 (k0+2)) + ..., its last factor's k at
	// most df-2: k0 = 2 for an even df, 3 for an odd one.
	series := func(k0 int) float64 {
		term, sum := 1.0, 1.0
		for k := k0; k <= df-2; k += 2 {
			term *= c2 * float64(k-1) / float64(k)
			sum += term
		}
		return sum
	}
	var a float64 // P(|T| < t)
	if df%2 == 0 {
		a = s * series(2)
	} else {
		a = th
		if df > 1 {
			a += s * math.Cos(th) * series(3)
		}
		a *= 2 / math.Pi
	}
	return (1 - a) / 2
}

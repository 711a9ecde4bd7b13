package countsim

import (
	"math"
	"math/rand/v2"
)

// This file draws the counts: Poisson and binomial variates by inversion for small means and by
// Hörmann's transformed rejection (PTRS, BTRS) for large ones, so that a scrape of a few thousand
// requests costs a handful of uniforms, never one per request.

// lnFact returns log(k!).
func lnFact(k float64) float64 {
	v, _ := math.Lgamma(k + 1)
	return v
}

// poisson draws a Poisson variate of mean lam (0 for lam <= 0 or not finite).
func poisson(rng *rand.Rand, lam float64) float64 {
	switch {
	case !(lam > 0) || math.IsInf(lam, 0):
		return 0
	case lam < 10:
		limit, p, k := math.Exp(-lam), 1.0, 0.0
		for {
			p *= rng.Float64()
			if p <= limit {
				return k
			}
			k++
		}
	}
	return poissonPTRS(rng, lam)
}

// poissonPTRS is the transformed rejection with squeeze of Hörmann (1993) for lam >= 10.
func poissonPTRS(rng *rand.Rand, lam float64) float64 {
	slam, llam := math.Sqrt(lam), math.Log(lam)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	lInvAlpha := math.Log(1.1239 + 1.1328/(b-3.4))
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u, v := rng.Float64()-0.5, rng.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lam + 0.43)
		if us >= 0.07 && v <= vr {
			return k
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		if math.Log(v)+lInvAlpha-math.Log(a/(us*us)+b) <= -lam+k*llam-lnFact(k) {
			return k
		}
	}
}

// binomial draws a Binomial(n, p) variate; n is a whole number >= 0 and p is clamped to [0, 1].
func binomial(rng *rand.Rand, n, p float64) float64 {
	switch {
	case !(n > 0) || !(p > 0):
		return 0
	case p >= 1:
		return n
	case p > 0.5:
		return n - binomial(rng, n, 1-p)
	case n*p < 10:
		return binomialInversion(rng, n, p)
	}
	return binomialBTRS(rng, n, p)
}

// binomialInversion walks the distribution function from 0 (p <= 0.5, n p < 10: a few steps).
func binomialInversion(rng *rand.Rand, n, p float64) float64 {
	q := 1 - p
	s := p / q
	a := (n + 1) * s
	for {
		r := math.Pow(q, n)
		u, x := rng.Float64(), 0.0
		for u > r && x <= n {
			u -= r
			x++
			r *= a/x - s
		}
		if x <= n {
			return x
		}
	}
}

// binomialBTRS is the transformed rejection of Hörmann (1993) for p <= 0.5 and n p >= 10.
func binomialBTRS(rng *rand.Rand, n, p float64) float64 {
	q := 1 - p
	spq := math.Sqrt(n * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := n*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	lpq := math.Log(p / q)
	m := math.Floor((n + 1) * p)
	h := lnFact(m) + lnFact(n-m)
	for {
		u, v := rng.Float64()-0.5, rng.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > n {
			continue
		}
		if us >= 0.07 && v <= vr {
			return k
		}
		if math.Log(v*alpha/(a/(us*us)+b)) <= h-lnFact(k)-lnFact(n-k)+(k-m)*lpq {
			return k
		}
	}
}

// normCDF is the standard normal distribution function.
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// normQuantile is the standard normal quantile.
func normQuantile(p float64) float64 { return invert(normCDF, p, 40) }

// invert returns the x in [-lim, lim] where the increasing cdf reaches p, by bisection (the report
// and the tests need a few quantiles, never in a loop over requests).
func invert(cdf func(float64) float64, p, lim float64) float64 {
	lo, hi := -lim, lim
	for range 200 {
		mid := (lo + hi) / 2
		if cdf(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// t3CDF is the distribution function of Student's t with 3 degrees of freedom (closed form).
func t3CDF(t float64) float64 {
	x := t / math.Sqrt(3)
	return 0.5 + (x/(1+x*x)+math.Atan(x))/math.Pi
}

// t3Q99 is the 0.99 quantile of Student's t with 3 degrees of freedom.
const t3Q99 = 4.540702858698419

// z99 is the 0.99 quantile of the standard normal.
const z99 = 2.3263478740408408

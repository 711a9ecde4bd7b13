package parity

import (
	"fmt"
	"math"
)

// This file bounds a proportion SLI's rates from the tracks' event counts
// (catalog.SLI.CountRule): the sequential test's confidence sequence on the
// per-minute differences has a half-width proportional to their standard
// deviation, which is 0 when neither track had a single error in a few
// minutes, whatever the traffic. The counts say how little that proves.
//
// With k events among n trials of rate p, the beta-binomial mixture
//
//	M_n(p) = B(1+k, 1+n-k) / (p^k (1-p)^(n-k))
//
// (the likelihood ratio of a uniform prior on the rate against p) is a
// nonnegative martingale with M_0 = 1 under p, so by Ville's inequality
// {p: M_n(p) < 1/a} holds the true rate at every n at once with probability
// at least 1 - a: a confidence sequence, valid however often it is read.
// The counts come from rate rules times their range, which Prometheus
// extrapolates, so k and n need not be whole; the bound treats them as
// counts.

// rateBounds returns the ends of the confidence sequence at level a of a
// rate with k events among n trials: [0, 1] for n <= 0.
func rateBounds(k, n, a float64) (lo, hi float64) {
	if n <= 0 || !finite(k) || !finite(n) {
		return 0, 1
	}
	k = math.Min(math.Max(k, 0), n)
	c := math.Log(1 / a)
	lb := lbeta(1+k, 1+n-k)
	logM := func(p float64) float64 {
		v := lb
		if k > 0 {
			v -= k * math.Log(p)
		}
		if n-k > 0 {
			v -= (n - k) * math.Log1p(-p)
		}
		return v
	}
	phat := k / n
	// logM is convex with its minimum, at most 0, at phat: each end is where it crosses c.
	lo, hi = 0, 1
	if k > 0 {
		lo = bisect(logM, c, phat, 0)
	}
	if n-k > 0 {
		hi = bisect(logM, c, phat, 1)
	}
	return lo, hi
}

// bisect returns the point between in (where f < c) and out (the end of
// [0, 1] where f grows past c) at which f reaches c, to within 1e-12.
func bisect(f func(float64) float64, c, in, out float64) float64 {
	for range 100 {
		mid := (in + out) / 2
		if mid == in || mid == out {
			break
		}
		if f(mid) < c {
			in = mid
		} else {
			out = mid
		}
		if math.Abs(out-in) < 1e-12 {
			break
		}
	}
	return out
}

// lbeta returns log B(a, b).
func lbeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// counts is what the pairs with both tracks' event counts known add up to:
// each track's events (the proportion times the count) and count.
type counts struct {
	kStable, nStable, kGray, nGray float64
}

// add adds one pair's counts, if it has both.
func (n *counts) add(p Pair) {
	if !(p.NStable > 0) || !(p.NGray > 0) || !finite(p.NStable) || !finite(p.NGray) {
		return
	}
	n.kStable += p.Stable * p.NStable
	n.nStable += p.NStable
	n.kGray += p.Gray * p.NGray
	n.nGray += p.NGray
}

// worst returns the worst difference of the tracks' rates, sign*(gray -
// stable), that the counts leave possible at e-value bar: each track's
// rate bounded at level 1/(2 bar), the two spending the SLI's share of
// alpha between them.
func (n counts) worst(sign, bar float64) float64 {
	a := 1 / (2 * bar)
	sLo, sHi := rateBounds(n.kStable, n.nStable, a)
	gLo, gHi := rateBounds(n.kGray, n.nGray, a)
	if sign > 0 {
		return gHi - sLo
	}
	return sHi - gLo
}

// countNote says why a proportion's counts keep it from a PASS.
func (n counts) countNote(worst, margin float64) string {
	if n.nGray <= 0 {
		return "no request counts with the samples: a proportion passes only once the counts bound its rates"
	}
	return fmt.Sprintf("the request counts (%.0f stable, %.0f gray) do not yet rule out a difference of %.4g, beyond the margin %.4g", n.nStable, n.nGray, worst, margin)
}

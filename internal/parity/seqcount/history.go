package seqcount

import "math"

// driftVar returns the variance that stable's own step-to-step wandering implies for the sum of the
// window's n contrasts at a boundary of relative part rel (package doc, "Stable's history"):
//
//	V_drift = (1 + (1+rel)^2) (rbar Rg)^2 max(0, n g(0) + 2 sum_{k=1..L} (n-k) g(k)),
//
// where y_i = r_i/rbar - 1 are stable's relative step rates over its history and the window (rates
// r_i = num_i/req_i, rbar their pooled rate), g(k) their autocovariances at lag k with the mean
// taken out (divided by the series' length N) and corrected for it by adding the long-run variance
// they imply over N, L = min(n-1, N/3, maxDriftLag), and Rg gray's mean requests per step, times
// estimateFactor for a test whose bar is e^logBar. Gray's drift is taken to be as large as stable's.
// It is 0 without two steps or with a zero pooled rate.
func driftVar(num, req []float64, n int, rg, rel, logBar float64) float64 {
	v, _ := driftSum(num, req, n, rg, logBar)
	return driftFactor(Bound{Rel: rel}, 0) * v
}

// maxDriftLag is the longest lag driftVar reads: 30 steps, 10 minutes at 20 s steps.
const maxDriftLag = 30

// driftSum is driftVar without its factor (1 + (1+rel)^2): the variance of the window's sum that
// stable's wandering alone implies. It also returns g(0)/lrv (at most 1): the share of one step in
// the effective number of independent steps of stable's series (1 without two steps).
func driftSum(num, req []float64, n int, rg, logBar float64) (v, oneStep float64) {
	N := len(num)
	if N < 2 || n < 1 || len(req) != N {
		return 0, 1
	}
	ys, rbar := relRates(num, req)
	if !(rbar > 0) {
		return 0, 1
	}
	g, lrv, bias := longRunVar(ys, n-1)
	sum := float64(n) * (g[0] + bias)
	for k := 1; k < len(g); k++ {
		sum += 2 * float64(n-k) * (g[k] + bias)
	}
	oneStep = 1.0
	if g[0] > 0 {
		oneStep = g[0] / math.Max(lrv, g[0])
	}
	if !(sum > 0) {
		return 0, oneStep
	}
	return rbar * rbar * rg * rg * sum * estimateFactor(float64(N)*oneStep, logBar), oneStep
}

// estimateFactor returns the factor F by which a variance estimated on df effective degrees of
// freedom is raised for a test whose bar is e^L (package doc, "Stable's history"):
//
//	F = df (e^(2L/df) - 1) / (2L),
//
// the F at which the chance of a sum crossing the bar, averaged over the estimate's own sampling
// error, is what the bar promises with the variance known. A normal sum of variance V crosses
// sqrt(2 L F W V) with probability at most e^(-L F W); with the estimate W V, W distributed as
// chi-squared over df, the mean of that bound is (1 + 2 L F/df)^(-df/2), and F makes it e^-L. It
// is 1 at infinitely many degrees of freedom, 2.29 at 10 and 1.48 at 20 for the catalog's bar of
// 1600 (L = 7.38). Until stop 50 the factor was df over chi-squared's 1% quantile (3.9 at 10, 2.4
// at 20), which took the estimate at a 99% upper bound and then as known: it spent 1% on the
// estimate, eight times the per-SLI alpha, and was four times slower to FAIL ar1's p99 +40% than
// the oracle (docs/controller.md). df below 1 counts as 1, and 2L/df is capped at 700 (no
// overflow); it is 1 when L is not positive.
func estimateFactor(df, L float64) float64 {
	if !(L > 0) {
		return 1
	}
	if !(df > 1) {
		df = 1
	}
	x := math.Min(2*L/df, 700)
	return math.Max(1, math.Expm1(x)/x)
}

// sharedShare returns a lower 99% confidence bound, clipped to [0, 1], of the long-run
// correlation of gray's and stable's relative step rates over the window (package doc, "Stable's
// history"): the share of the drift bound that a drift shared by both tracks cancels in the
// contrast. With a_i = rg_i/abar - 1 and b_i = rs_i/bbar - 1 (rates num/req, abar and bbar the
// pooled rates, each series centred), c_k(x, y) = sum_{i>=k} x_i y_{i-k}/n, L = min(n/3,
// maxDriftLag) and Bartlett weights w_k = 1 - k/(L+1),
//
//	r = lrc / sqrt(lrv(a) lrv(b)),   lrc = c_0(a, b) + sum_{k=1..L} w_k (c_k(a, b) + c_k(b, a)),
//
// lrv(x) = max(c_0(x, x), c_0(x, x) + 2 sum_k w_k c_k(x, x)) (never below the lag-0 variance, so
// that negatively correlated steps do not shrink the denominator). The bound is Fisher's,
// tanh(atanh(r) - z_0.99/sqrt(df-3)), on df = n min(c_0(a, a)/lrv(a), c_0(b, b)/lrv(b), oneStep)
// effective pairs, oneStep the same ratio of stable's longer series (driftSum): a correlation of
// slowly wandering series rests on few independent pairs, and a short window's own
// autocorrelations understate how slowly; 0 with df <= 4. It is read at every look, so the bound
// is at 99%, not 95%: a chance correlation credited at one look would lower the variance there.
// Gray's own sampling noise lowers r, so a shared drift is credited only in part when gray's
// share of the traffic is small.
func sharedShare(ng, rg, ns, rs []float64, oneStep float64) float64 {
	n := len(ng)
	if n < 2 || len(rg) != n || len(ns) != n || len(rs) != n {
		return 0
	}
	a, ra := relRates(ng, rg)
	b, rb := relRates(ns, rs)
	if !(ra > 0 && rb > 0) {
		return 0
	}
	ga, gb := crossCov(a, a, 0), crossCov(b, b, 0)
	if !(ga > 0 && gb > 0) {
		return 0
	}
	L := min(n/3, maxDriftLag)
	la, lb, lrc := ga, gb, crossCov(a, b, 0)
	for k := 1; k <= L; k++ {
		w := 1 - float64(k)/float64(L+1)
		la += 2 * w * crossCov(a, a, k)
		lb += 2 * w * crossCov(b, b, k)
		lrc += w * (crossCov(a, b, k) + crossCov(b, a, k))
	}
	r := lrc / math.Sqrt(max(la, ga)*max(lb, gb))
	if !(r > 0) {
		return 0
	}
	df := float64(n) * min(ga/max(la, ga), gb/max(lb, gb), oneStep)
	if !(df > 4) {
		return 0
	}
	const z99 = 2.3263478740408408
	lo := math.Tanh(math.Atanh(min(r, 1-1e-12)) - z99/math.Sqrt(df-3))
	return math.Min(math.Max(lo, 0), 1)
}

// relRates returns num_i/req_i over the pooled rate rbar, less 1, centred on their mean, and
// rbar; rbar 0 (and no rates) when the pooled rate is not a positive finite number.
func relRates(num, req []float64) ([]float64, float64) {
	var sn, sr float64
	for i := range num {
		sn += num[i]
		sr += req[i]
	}
	rbar := sn / sr
	if !(rbar > 0) || math.IsInf(rbar, 0) {
		return nil, 0
	}
	ys := make([]float64, len(num))
	for i := range num {
		ys[i] = num[i]/req[i]/rbar - 1
	}
	return centre(ys), rbar
}

// centre subtracts the mean of xs from each of its values, in place, and returns xs.
func centre(xs []float64) []float64 {
	var mean float64
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	for i := range xs {
		xs[i] -= mean
	}
	return xs
}

// longRunVar returns the autocovariances g(0..L) of the centred series c (crossCov), with
// L = min(maxLag, len(c)/3, maxDriftLag), its long-run variance lrv under Bartlett weights
// (g(0) + 2 sum_k (1 - k/(L+1)) g(k)), and the bias max(lrv, 0)/len(c) by which each g(k) falls
// short for being taken about the series' own mean. driftSum and longRunFactor each sum the
// corrected g(k) + bias their own way. c must hold at least one value.
func longRunVar(c []float64, maxLag int) (g []float64, lrv, bias float64) {
	L := min(maxLag, len(c)/3, maxDriftLag)
	g = make([]float64, L+1)
	for k := range g {
		g[k] = crossCov(c, c, k)
	}
	lrv = g[0]
	for k := 1; k <= L; k++ {
		lrv += 2 * (1 - float64(k)/float64(L+1)) * g[k]
	}
	return g, lrv, math.Max(lrv, 0) / float64(len(c))
}

// crossCov returns sum_{i>=k} x_i y_{i-k} / len(x) of two centred series of one length.
func crossCov(x, y []float64, k int) float64 {
	var s float64
	for i := k; i < len(x); i++ {
		s += x[i] * y[i-k]
	}
	return s / float64(len(x))
}

// driftFactor is the factor of driftSum at the boundary b when a share f of stable's wandering is
// shared with gray: gray's rate less (1+Rel) times stable's keeps (1 + (1+Rel)^2 - 2 (1+Rel) f) of
// the variance (Rel^2 at f = 1, stableFactor at f = 0).
func driftFactor(b Bound, f float64) float64 {
	k := 1 + b.Rel
	return math.Max(1+k*k-2*k*f, b.Rel*b.Rel)
}

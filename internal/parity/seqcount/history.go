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
// they imply over N, L = min(n-1, N/3, maxDriftLag), and Rg gray's mean requests per step. Gray's
// drift is taken to be as large as stable's. It is 0 without two steps or with a zero pooled rate.
func driftVar(num, req []float64, n int, rg, rel float64) float64 {
	return (1 + (1+rel)*(1+rel)) * driftSum(num, req, n, rg)
}

// maxDriftLag is the longest lag driftVar reads: 30 steps, 10 minutes at 20 s steps.
const maxDriftLag = 30

// driftSum is driftVar without its factor (1 + (1+rel)^2): the variance of the window's sum that
// stable's wandering alone implies.
func driftSum(num, req []float64, n int, rg float64) float64 {
	N := len(num)
	if N < 2 || n < 1 || len(req) != N {
		return 0
	}
	var sn, sr float64
	for i := range num {
		sn += num[i]
		sr += req[i]
	}
	rbar := sn / sr
	if !(rbar > 0) || math.IsInf(rbar, 0) {
		return 0
	}
	ys := make([]float64, N)
	var mean float64
	for i := range num {
		ys[i] = num[i]/req[i]/rbar - 1
		mean += ys[i] / float64(N)
	}
	L := min(n-1, N/3, maxDriftLag)
	g := autocov(ys, mean, L)
	lrv := g[0]
	for k := 1; k <= L; k++ {
		lrv += 2 * (1 - float64(k)/float64(L+1)) * g[k]
	}
	bias := math.Max(lrv, 0) / float64(N) // E[g(k)] falls short by about the long-run variance over N
	sum := float64(n) * (g[0] + bias)
	for k := 1; k <= L; k++ {
		sum += 2 * float64(n-k) * (g[k] + bias)
	}
	if !(sum > 0) {
		return 0
	}
	return rbar * rbar * rg * rg * sum * upperFactor(float64(N)*g[0]/math.Max(lrv, g[0]))
}

// upperFactor returns df/q, q the 10% quantile of chi-squared with df degrees of freedom (the
// Wilson-Hilferty approximation): a variance estimated with df degrees of freedom is below the
// truth by more than this factor in about 10% of cases.
func upperFactor(df float64) float64 {
	if !(df > 1) {
		df = 1
	}
	const z10 = -1.2815515655446004
	h := 2 / (9 * df)
	q := df * math.Pow(math.Max(1-h+z10*math.Sqrt(h), 0.05), 3)
	return df / q
}

// autocov returns the autocovariances of xs about mean at lags 0..lag, each summed over the pairs
// and divided by len(xs).
func autocov(xs []float64, mean float64, lag int) []float64 {
	g := make([]float64, lag+1)
	for k := range g {
		for i := k; i < len(xs); i++ {
			g[k] += (xs[i] - mean) * (xs[i-k] - mean)
		}
		g[k] /= float64(len(xs))
	}
	return g
}

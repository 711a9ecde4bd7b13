// Package mwu implements the Mann-Whitney U test (also called the Wilcoxon
// rank-sum test) of two independent samples, with the Vargha-Delaney A
// effect size.
//
// The test asks whether values of one sample tend to be larger than values
// of the other, without assuming any distribution: it uses only the order
// of the pooled values. The p-value is exact (the distribution of U counted
// by recursion) when there are no ties and the samples are small, and from
// the normal approximation with a tie and continuity correction otherwise.
//
// github.com/aclements/go-moremath/stats (behind benchstat) has an exact
// test with ties up to 25 per sample, but its one-sided p-value with ties
// is off at a half-integer U (1 - CDF(U-1) also counts the mass between
// U-1 and U: 0.418 where enumerating every arrangement gives 0.354 on
// TestApproximationWithTies' third sample), so this package keeps its own
// code, checked against enumeration.
//
// The package has no state; every function is safe for concurrent use.
package mwu

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Alternative is the alternative hypothesis about y against x.
type Alternative int

// The alternatives.
const (
	// Greater: y tends to be larger than x.
	Greater Alternative = iota
	// Less: y tends to be smaller than x.
	Less
	// TwoSided: y tends to differ from x.
	TwoSided
)

// String names the alternative.
func (a Alternative) String() string {
	switch a {
	case Greater:
		return "greater"
	case Less:
		return "less"
	case TwoSided:
		return "two-sided"
	}
	return fmt.Sprintf("Alternative(%d)", int(a))
}

// ExactMaxN is the largest pooled sample size for which a tie-free test is
// computed exactly; above it, or with ties, the normal approximation is
// used.
const ExactMaxN = 50

// Result is the outcome of a test.
type Result struct {
	// U is the U statistic of y: the number of pairs (x_i, y_j) with
	// y_j > x_i, ties counting one half.
	U float64
	// P is the p-value under the alternative.
	P float64
	// A is the Vargha-Delaney effect size U/(len(x)*len(y)): the
	// probability that a value of y exceeds a value of x (ties half).
	// 0.5 is no effect; 0.56, 0.64 and 0.71 are the conventional small,
	// medium and large effects of y being larger.
	A float64
	// Exact says the p-value was counted exactly.
	Exact bool
}

// ErrEmpty is returned when a sample is empty.
var ErrEmpty = errors.New("mwu: a sample is empty")

// Test runs the Mann-Whitney U test of y against x. NaN values are an
// error: they have no rank.
func Test(x, y []float64, alt Alternative) (Result, error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return Result{}, ErrEmpty
	}
	if alt != Greater && alt != Less && alt != TwoSided {
		return Result{}, fmt.Errorf("mwu: unknown alternative %d", int(alt))
	}
	all, err := pooled(x, y)
	if err != nil {
		return Result{}, err
	}
	rankSumY, tieSum := midRanks(all)
	fn1, fn2 := float64(n1), float64(n2)
	u := rankSumY - fn2*(fn2+1)/2
	res := Result{U: u, A: u / (fn1 * fn2)}

	if tieSum == 0 && n1+n2 <= ExactMaxN {
		res.Exact = true
		dist := uDistribution(n1, n2)
		ui := int(math.Round(u))
		res.P = pValue(alt, tail(dist, ui, true), tail(dist, ui, false)) // P(U >= u), P(U <= u)
		return res, nil
	}

	n := fn1 + fn2
	mu := fn1 * fn2 / 2
	sigma := math.Sqrt(fn1 * fn2 / 12 * ((n + 1) - tieSum/(n*(n-1))))
	if sigma == 0 {
		// Every value is equal: no evidence either way.
		res.P = 1
		return res, nil
	}
	res.P = pValue(alt, normalUpper((u-mu-0.5)/sigma), 1-normalUpper((u-mu+0.5)/sigma))
	return res, nil
}

// obs is one observation of the pooled samples.
type obs struct {
	v    float64
	from int // 0: x, 1: y
}

// pooled returns the observations of x and y together, sorted by value; a
// NaN is an error.
func pooled(x, y []float64) ([]obs, error) {
	all := make([]obs, 0, len(x)+len(y))
	for from, sample := range [][]float64{x, y} {
		for _, v := range sample {
			if math.IsNaN(v) {
				return nil, fmt.Errorf("mwu: %s holds a NaN", [2]string{"x", "y"}[from])
			}
			all = append(all, obs{v, from})
		}
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	return all, nil
}

// midRanks returns the sum of y's mid-ranks in the sorted observations and
// the ties' correction: t^3 - t summed over the groups of t tied values.
func midRanks(all []obs) (rankSumY, tieSum float64) {
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		mid := float64(i+1+j) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].from == 1 {
				rankSumY += mid
			}
		}
		if t := float64(j - i); t > 1 {
			tieSum += t*t*t - t
		}
		i = j
	}
	return rankSumY, tieSum
}

// pValue picks the p-value of alt from the upper tail P(U >= u) and the lower tail P(U <= u).
func pValue(alt Alternative, upper, lower float64) float64 {
	switch alt {
	case Greater:
		return upper
	case Less:
		return lower
	default:
		return math.Min(1, 2*math.Min(upper, lower))
	}
}

// normalUpper is P(Z >= z) for a standard normal Z.
func normalUpper(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// uDistribution returns P(U = u) for u = 0..n1*n2 under the null
// hypothesis, without ties: the number of arrangements with U = u, by the
// recursion f(u; m, n) = f(u - m; m, n - 1) + f(u; m - 1, n) (the
// largest value is a y, or an x), divided by C(m+n, m).
func uDistribution(n1, n2 int) []float64 {
	// f[m][u] for the current n, built up from n = 0.
	prev := make([][]float64, n1+1) // n = 0: only U = 0
	for m := range prev {
		prev[m] = []float64{1}
	}
	for n := 1; n <= n2; n++ {
		cur := make([][]float64, n1+1)
		cur[0] = []float64{1}
		for m := 1; m <= n1; m++ {
			row := make([]float64, m*n+1)
			for u := range row {
				// The largest value is a y: it exceeds all m x's.
				if u-m >= 0 && u-m < len(prev[m]) {
					row[u] += prev[m][u-m]
				}
				// The largest value is an x: it exceeds no y.
				if u < len(cur[m-1]) {
					row[u] += cur[m-1][u]
				}
			}
			cur[m] = row
		}
		prev = cur
	}
	dist := prev[n1]
	total := 0.0
	for _, c := range dist {
		total += c
	}
	out := make([]float64, len(dist))
	for i, c := range dist {
		out[i] = c / total
	}
	return out
}

// tail sums dist from u upwards (upper) or from 0 to u.
func tail(dist []float64, u int, upper bool) float64 {
	s := 0.0
	for i, p := range dist {
		if (upper && i >= u) || (!upper && i <= u) {
			s += p
		}
	}
	return math.Min(1, s)
}

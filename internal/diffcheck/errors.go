package diffcheck

import (
	"fmt"
	"math"
)

// DefaultErrorAlpha is the level of ErrorTest's one-sided test unless the
// caller says otherwise: a gray whose failed requests are as frequent as
// stable's is found to have more in at most 1% of runs.
const DefaultErrorAlpha = 0.01

// ErrorTest compares the shares of failed requests of the two tracks'
// loads, as the client saw them: a 5xx, no response at all (a transport
// error, a timeout, a connection a panicking handler closed:
// loadgen.Stats.Errors), or a malformed one (a JSON Content-Type whose body
// does not parse: loadgen.Stats.Malformed). The service's own metrics count
// none of them but the 5xx it wrote.
type ErrorTest struct {
	// StableErrors of StableRequests, GrayErrors of GrayRequests.
	StableErrors   uint64 `json:"stable_errors"`
	StableRequests uint64 `json:"stable_requests"`
	GrayErrors     uint64 `json:"gray_errors"`
	GrayRequests   uint64 `json:"gray_requests"`
	// P is the one-sided p-value of Fisher's exact test of "gray's share of
	// errors is at most stable's" against "it is larger": the probability,
	// given the errors of both tracks together and each track's requests,
	// that gray would get GrayErrors of them or more if a failure were as
	// likely on either track (the hypergeometric tail). 1 when a track has
	// no requests or gray has no errors.
	P float64 `json:"p"`
	// Alpha is the test's level; Outcome is Fail when P < Alpha, NoData
	// when a track has no requests, Pass otherwise.
	Alpha   float64 `json:"alpha"`
	Outcome Outcome `json:"outcome"`
}

// String states the test on one line.
func (t ErrorTest) String() string {
	if t.Outcome == NoData {
		return fmt.Sprintf("failed requests not compared: gray %d of %d requests, stable %d of %d", t.GrayErrors, t.GrayRequests, t.StableErrors, t.StableRequests)
	}
	rel := ">="
	if t.Outcome == Fail {
		rel = "<"
	}
	return fmt.Sprintf("gray %d failed of %d requests, stable %d of %d: one-sided Fisher exact p = %.3g %s %g",
		t.GrayErrors, t.GrayRequests, t.StableErrors, t.StableRequests, t.P, rel, t.Alpha)
}

// CompareErrors tests whether gray's share of failed requests exceeds
// stable's beyond chance, with Fisher's exact test at level alpha (0 means
// DefaultErrorAlpha). It is exact at any count, so that 7 errors against
// none are judged as well as 700 against 300: with equal requests, 7 to 0
// gives p = 0.0078 (a FAIL at 1%), 4 to 0 p = 0.062 (not). It returns an
// error for an alpha outside (0, 0.5] or more errors than requests.
func CompareErrors(stableErrors, stableRequests, grayErrors, grayRequests uint64, alpha float64) (ErrorTest, error) {
	if alpha == 0 {
		alpha = DefaultErrorAlpha
	}
	t := ErrorTest{StableErrors: stableErrors, StableRequests: stableRequests, GrayErrors: grayErrors, GrayRequests: grayRequests, P: 1, Alpha: alpha}
	switch {
	case !(alpha > 0 && alpha <= 0.5):
		return t, fmt.Errorf("%w: alpha must be in (0, 0.5], got %g", ErrOptions, alpha)
	case stableErrors > stableRequests || grayErrors > grayRequests:
		return t, fmt.Errorf("%w: more errors than requests (stable %d of %d, gray %d of %d)", ErrOptions, stableErrors, stableRequests, grayErrors, grayRequests)
	case stableRequests == 0 || grayRequests == 0:
		t.Outcome = NoData
		return t, nil
	}
	t.P = fisherGreater(float64(grayErrors), float64(grayRequests), float64(stableErrors+grayErrors), float64(stableRequests+grayRequests))
	t.Outcome = Pass
	if t.P < alpha {
		t.Outcome = Fail
	}
	return t, nil
}

// fisherGreater returns P(X >= k) for X hypergeometric: n draws from a
// population of total holding errs errors, each term computed through
// log-gamma.
func fisherGreater(k, n, errs, total float64) float64 {
	if k <= 0 {
		return 1
	}
	lchoose := func(a, b float64) float64 {
		la, _ := math.Lgamma(a + 1)
		lb, _ := math.Lgamma(b + 1)
		lab, _ := math.Lgamma(a - b + 1)
		return la - lb - lab
	}
	denom := lchoose(total, n)
	hi := math.Min(errs, n)
	p := 0.0
	for x := k; x <= hi; x++ {
		if n-x > total-errs {
			continue // more non-errors drawn than there are
		}
		p += math.Exp(lchoose(errs, x) + lchoose(total-errs, n-x) - denom)
	}
	return math.Min(1, p)
}

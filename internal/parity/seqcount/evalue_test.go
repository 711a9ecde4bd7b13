package seqcount

import (
	"math"
	"testing"
)

// TestLogMixtureEMatchesQuadrature compares the closed form with the mixture integrated
// numerically: E = int_0^inf 2 phi(lambda; 0, c^2) exp(lambda s - lambda^2 v/2) dlambda.
func TestLogMixtureEMatchesQuadrature(t *testing.T) {
	for _, tc := range []struct{ s, v, c float64 }{
		{0, 1, 1}, {3, 2, 0.5}, {-4, 3, 2}, {12, 10, 0.3}, {40, 50, 1}, {-200, 50, 1},
	} {
		const steps = 200000
		hi := math.Max(40/tc.c, 40/math.Sqrt(tc.v)+math.Max(tc.s/tc.v, 0)*2)
		h := hi / steps
		var sum float64
		for i := range steps {
			l := (float64(i) + 0.5) * h
			sum += 2 / (tc.c * math.Sqrt(2*math.Pi)) * math.Exp(-l*l/(2*tc.c*tc.c)+l*tc.s-l*l*tc.v/2) * h
		}
		got, want := logMixtureE(tc.s, tc.v, tc.c), math.Log(sum)
		if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Errorf("s=%g v=%g c=%g: closed form log E %.6g, quadrature %.6g", tc.s, tc.v, tc.c, got, want)
		}
	}
}

func TestLogPhiTail(t *testing.T) {
	// Continuity across the switch to the asymptotic series, and a known value.
	a, b := logPhi(-30+1e-9), logPhi(-30-1e-9)
	if math.Abs(a-b) > 1e-6 {
		t.Errorf("logPhi jumps at -30: %g vs %g", a, b)
	}
	if got := math.Exp(logPhi(-1.959963984540054)); math.Abs(got-0.025) > 1e-9 {
		t.Errorf("Phi(-1.96) = %g, want 0.025", got)
	}
}

func TestZUpper(t *testing.T) {
	for _, tc := range []struct{ p, z float64 }{{0.025, 1.959963984540054}, {0.0025, 2.807033768343811}, {0.5, 0}} {
		if got := zUpper(tc.p); math.Abs(got-tc.z) > 1e-9 {
			t.Errorf("zUpper(%g) = %.12g, want %.12g", tc.p, got, tc.z)
		}
	}
}

func TestInflation(t *testing.T) {
	alternating := []float64{1, -1, 1, -1, 1, -1, 1, -1}
	trending := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if got := inflation(alternating, 3); got != 1+2*(1-2.0/4)*(6.0/8) {
		// lag 1 and 3 are negative (clipped to 0); lag 2 is +6/8.
		t.Errorf("alternating: %g", got)
	}
	if got := inflation(trending, 3); !(got > 2.5) {
		t.Errorf("a trend must inflate the variance a lot, got %g", got)
	}
	if got := inflation([]float64{3, 3, 3}, 3); got != 1 {
		t.Errorf("constant: %g, want 1", got)
	}
}

// TestLogMixtureCum checks the grid mixture: with a normal cumulant it is the closed-form normal
// mixture within a few percent of E; a Poisson upper cumulant makes it smaller (a heavier upper
// tail costs evidence) and a Poisson lower one larger; a cumulant that overflows gives no
// evidence, and s or c it cannot use gives E = 1.
func TestLogMixtureCum(t *testing.T) {
	for _, tc := range []struct{ s, v, c float64 }{{3, 2, 0.5}, {12, 10, 0.3}, {40, 50, 1}, {-5, 10, 1}} {
		normal := func(l float64) float64 { return tc.v * l * l / 2 }
		got, want := logMixtureCum(tc.s, tc.c, normal), logMixtureE(tc.s, tc.v, tc.c)
		if math.Abs(got-want) > 0.05 {
			t.Errorf("s=%g v=%g c=%g, normal cumulant: log E %.4g, the closed form's %.4g", tc.s, tc.v, tc.c, got, want)
		}
		up := logMixtureCum(tc.s, tc.c, func(l float64) float64 { return tc.v * poissonUp(l) })
		down := logMixtureCum(tc.s, tc.c, func(l float64) float64 { return tc.v * poissonDown(l) })
		if tc.s > 0 && !(up < got && got < down) {
			t.Errorf("s=%g v=%g c=%g: log E %.4g (Poisson up), %.4g (normal), %.4g (Poisson down), want increasing", tc.s, tc.v, tc.c, up, got, down)
		}
	}
	if got := logMixtureCum(1e300, 1e300, func(l float64) float64 { return math.Inf(1) }); !math.IsInf(got, -1) {
		t.Errorf("an infinite cumulant: log E %g, want -Inf", got)
	}
	for _, bad := range [][2]float64{{math.NaN(), 1}, {1, 0}, {1, math.Inf(1)}, {1, -1}} {
		if got := logMixtureCum(bad[0], bad[1], func(l float64) float64 { return l * l / 2 }); got != 0 {
			t.Errorf("logMixtureCum(%v) = %g, want 0", bad, got)
		}
	}
	var tot float64
	for _, lw := range cumLogWeights {
		tot += math.Exp(lw)
	}
	if math.Abs(tot-1) > 1e-12 {
		t.Errorf("the grid's weights sum to %.15g, want 1", tot)
	}
	if got, want := jumpCum(0.7, 0), 0.7*0.7/2; math.Abs(got-want) > 1e-15 {
		t.Errorf("jumpCum(0.7, 0) = %g, want %g", got, want)
	}
	if got, want := jumpCum(0.7, 1e-4), 0.7*0.7/2; math.Abs(got/want-1) > 1e-3 {
		t.Errorf("jumpCum(0.7, 1e-4) = %g, want about %g", got, want)
	}
}

// BenchmarkLogMixtureCum measures one grid mixture with a Poisson cumulant, which the judge
// computes twice per SLI at every look; it must not allocate.
func BenchmarkLogMixtureCum(b *testing.B) {
	b.ReportAllocs()
	cum := func(l float64) float64 { return 12 * poissonUp(l) }
	var sink float64
	for b.Loop() {
		sink += logMixtureCum(9, 0.4, cum)
	}
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

// TestCumRoot: with no stable part the FAIL bound's best lambda is Poisson's, log(1 + e/g); with
// almost no gray part it is the normal's, e/st; in between the slope is met.
func TestCumRoot(t *testing.T) {
	if got, want := cumRoot(0.004*300, 0.002*300, 0), math.Log(3); math.Abs(got-want) > 1e-9 {
		t.Errorf("cumRoot, gray only: %g, want %g", got, want)
	}
	if got, want := cumRoot(2, 1e-12, 4), 0.5; math.Abs(got-want) > 1e-6 {
		t.Errorf("cumRoot, stable only: %g, want %g", got, want)
	}
	if l := cumRoot(5, 1, 2); math.Abs(math.Expm1(l)+2*l-5) > 1e-9 {
		t.Errorf("cumRoot(5, 1, 2) = %g: slope %g, want 5", l, math.Expm1(l)+2*l)
	}
	if got := cumRoot(1e6, 1e-3, 0); !(got > 20 && got < 30) {
		t.Errorf("cumRoot of a huge effect: %g, want log(1e9) = 20.7", got)
	}
}

// TestTUpper checks Student's t quantiles against tables (scipy.stats.t.isf) for odd and even
// degrees of freedom, and that they approach the normal's as df grows.
func TestTUpper(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		df   int
		want float64
	}{
		{0.05, 1, 6.313751514675},
		{0.025, 2, 4.302652729749},
		{0.025, 3, 3.182446305284},
		{0.005, 10, 3.169272672617},
		{0.025, 30, 2.042272456301},
		{0.000625, 2, 28.257747834806}, // closed form at df 2: a sqrt(2/(1-a^2)), a = 1-2p
	} {
		if got := tUpper(tc.p, tc.df); math.Abs(got/tc.want-1) > 1e-6 {
			t.Errorf("tUpper(%g, %d) = %.10g, want %.10g", tc.p, tc.df, got, tc.want)
		}
	}
	if got, z := tUpper(0.000625, 400), zUpper(0.000625); !(got > z && got < z*1.01) {
		t.Errorf("tUpper(0.000625, 400) = %g, want just above the normal's %g", got, z)
	}
	if got := tUpper(0.01, 0); math.Abs(got-tUpper(0.01, 1)) > 1e-12 {
		t.Errorf("tUpper with df 0 = %g, want df 1's", got)
	}
}

// TestFmtE: an e-value beyond a float64 (exp overflows to +Inf in Result) is written as its
// exponent, never as "+Inf"; others as %g would.
func TestFmtE(t *testing.T) {
	for _, tc := range []struct {
		logE float64
		prec int
		want string
	}{
		{math.Log(1600), 4, "1600"},
		{0, 3, "1"},
		{math.Inf(-1), 3, "0"},
		{118.4, 4, "2.633e+51"},
		{812.25, 4, "e^812.2"},
		{math.Inf(1), 3, "e^+Inf"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := fmtE(tc.logE, tc.prec); got != tc.want {
				t.Errorf("fmtE(%g, %d) = %q, want %q", tc.logE, tc.prec, got, tc.want)
			}
		})
	}
}

package countsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestSamplersHaveTheirMeanAndVariance(t *testing.T) {
	cases := []struct {
		name       string
		draw       func(*rand.Rand) float64
		mean, vari float64
	}{
		{"Poisson 3 (multiplication)", func(r *rand.Rand) float64 { return poisson(r, 3) }, 3, 3},
		{"Poisson 500 (PTRS)", func(r *rand.Rand) float64 { return poisson(r, 500) }, 500, 500},
		{"binomial 40, 0.1 (inversion)", func(r *rand.Rand) float64 { return binomial(r, 40, 0.1) }, 4, 3.6},
		{"binomial 500, 0.3 (BTRS)", func(r *rand.Rand) float64 { return binomial(r, 500, 0.3) }, 150, 105},
		{"binomial 500, 0.97 (mirrored)", func(r *rand.Rand) float64 { return binomial(r, 500, 0.97) }, 485, 14.55},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			var m moments
			for range 200000 {
				m.add(c.draw(rng))
			}
			// The mean's standard error is sqrt(var/n); 5 of them is a generous bound.
			if se := math.Sqrt(c.vari / m.n); math.Abs(m.mean()-c.mean) > 5*se {
				t.Fatalf("mean %.4f, want %g +- %.4f", m.mean(), c.mean, 5*se)
			}
			if v := m.sd() * m.sd(); math.Abs(v/c.vari-1) > 0.03 {
				t.Fatalf("variance %.4f, want %g", v, c.vari)
			}
		})
	}
}

func TestSamplersOnTheEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		got, want float64
	}{
		{poisson(rng, 0), 0}, {poisson(rng, math.NaN()), 0}, {poisson(rng, math.Inf(1)), 0},
		{binomial(rng, 0, 0.5), 0}, {binomial(rng, 10, 0), 0}, {binomial(rng, 10, 1), 10}, {binomial(rng, 10, math.NaN()), 0},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("case %d", i), func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("got %g, want %g", c.got, c.want)
			}
		})
	}
}

func FuzzBinomial(f *testing.F) {
	f.Add(uint64(1), 10.0, 0.5)
	f.Add(uint64(2), 1e6, 1e-9)
	f.Add(uint64(3), 3.0, 0.999)
	f.Fuzz(func(t *testing.T, seed uint64, n, p float64) {
		n = math.Floor(math.Mod(math.Abs(n), 1e7))
		if math.IsNaN(n) {
			n = 0
		}
		k := binomial(rand.New(rand.NewPCG(seed, 0)), n, p)
		if k < 0 || k > n || k != math.Floor(k) {
			t.Fatalf("binomial(%g, %g) = %g", n, p, k)
		}
	})
}

func TestQuantilesOfTheTails(t *testing.T) {
	if got := normQuantile(0.99); math.Abs(got-z99) > 1e-9 {
		t.Fatalf("normal 0.99 quantile %g, want %g", got, z99)
	}
	if got := t3Quantile(0.99); math.Abs(got-t3Q99) > 1e-9 {
		t.Fatalf("t3 0.99 quantile %g, want %g", got, t3Q99)
	}
	if got := t3CDF(0); got != 0.5 {
		t.Fatalf("t3 CDF at 0 is %g", got)
	}
}

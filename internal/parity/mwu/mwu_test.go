package mwu_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/parity/mwu"
)

// bruteForce computes the exact permutation p-value of U by enumerating
// every way to choose which len(x) of the pooled values are the x's. It
// shares no code with the package: U is counted pair by pair.
func bruteForce(x, y []float64, alt mwu.Alternative) (u, p float64) {
	pooled := append(append([]float64{}, x...), y...)
	n, n1 := len(pooled), len(x)
	countU := func(isX []bool) float64 {
		c := 0.0
		for i := range pooled {
			if !isX[i] {
				continue
			}
			for j := range pooled {
				if isX[j] {
					continue
				}
				switch {
				case pooled[j] > pooled[i]:
					c++
				case pooled[j] == pooled[i]:
					c += 0.5
				}
			}
		}
		return c
	}
	obs := make([]bool, n)
	for i := range n1 {
		obs[i] = true
	}
	u = countU(obs)
	mu := float64(len(x)*len(y)) / 2
	var total, hit float64
	isX := make([]bool, n)
	var rec func(start, left int)
	rec = func(start, left int) {
		if left == 0 {
			v := countU(isX)
			total++
			switch alt {
			case mwu.Greater:
				if v >= u-1e-9 {
					hit++
				}
			case mwu.Less:
				if v <= u+1e-9 {
					hit++
				}
			case mwu.TwoSided:
				if math.Abs(v-mu) >= math.Abs(u-mu)-1e-9 {
					hit++
				}
			}
			return
		}
		for i := start; i <= n-left; i++ {
			isX[i] = true
			rec(i+1, left-1)
			isX[i] = false
		}
	}
	rec(0, n1)
	return u, hit / total
}

func TestKnownValues(t *testing.T) {
	tests := []struct {
		name  string
		x, y  []float64
		alt   mwu.Alternative
		wantU float64
		wantP float64
		exact bool
	}{
		// Complete separation of two samples of 5: only one of the C(10,5) =
		// 252 arrangements is as extreme.
		{"complete separation of 5 and 5 has p = 1/252", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, mwu.Greater, 25, 1.0 / 252, true},
		{"the other direction has p = 1", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, mwu.Less, 25, 1, true},
		// The textbook example of two groups (ages 19, 22, 16, 29, 24 against
		// 20, 11, 17, 12): U = 17, exact two-sided p = 0.1111 (= 14/126).
		{"the textbook example has U = 17 and p = 0.1111", []float64{20, 11, 17, 12}, []float64{19, 22, 16, 29, 24}, mwu.TwoSided, 17, 14.0 / 126, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mwu.Test(tt.x, tt.y, tt.alt)
			if err != nil {
				t.Fatal(err)
			}
			if got.U != tt.wantU || math.Abs(got.P-tt.wantP) > 1e-12 || got.Exact != tt.exact {
				t.Errorf("Test = %+v, want U %v, p %v, exact %v", got, tt.wantU, tt.wantP, tt.exact)
			}
			if a := tt.wantU / float64(len(tt.x)*len(tt.y)); got.A != a {
				t.Errorf("A = %v, want %v", got.A, a)
			}
		})
	}
}

// TestExactMatchesEnumeration checks the exact p-value against a brute
// force enumeration of every arrangement, on random tie-free samples.
func TestExactMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 30 {
		n1, n2 := 2+rng.IntN(6), 2+rng.IntN(6)
		x, y := make([]float64, n1), make([]float64, n2)
		for j := range x {
			x[j] = rng.NormFloat64()
		}
		for j := range y {
			y[j] = rng.NormFloat64() + 0.5
		}
		for _, alt := range []mwu.Alternative{mwu.Greater, mwu.Less, mwu.TwoSided} {
			t.Run(fmt.Sprintf("sample %d %s", i, alt), func(t *testing.T) {
				got, err := mwu.Test(x, y, alt)
				if err != nil {
					t.Fatal(err)
				}
				u, p := bruteForce(x, y, alt)
				if !got.Exact || got.U != u || math.Abs(got.P-p) > 1e-9 {
					t.Errorf("Test = %+v, enumeration U %v p %v", got, u, p)
				}
			})
		}
	}
}

// TestApproximationWithTies checks the normal approximation (used with
// ties) against the exact permutation p-value of samples of 8 with many
// ties, as scrape-step samples of a quantized histogram have.
func TestApproximationWithTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 10 {
		x, y := make([]float64, 8), make([]float64, 8)
		for j := range x {
			x[j] = float64(rng.IntN(5))
			y[j] = float64(rng.IntN(5) + rng.IntN(2))
		}
		t.Run(fmt.Sprintf("sample %d", i), func(t *testing.T) {
			got, err := mwu.Test(x, y, mwu.Greater)
			if err != nil {
				t.Fatal(err)
			}
			u, p := bruteForce(x, y, mwu.Greater)
			if got.Exact || got.U != u || math.Abs(got.P-p) > 0.03 {
				t.Errorf("Test = %+v, enumeration U %v p %.4f (tolerance 0.03)", got, u, p)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		alt  mwu.Alternative
		want string
	}{
		{"an empty sample is an error", nil, []float64{1}, mwu.Greater, "empty"},
		{"a NaN is an error", []float64{math.NaN()}, []float64{1}, mwu.Greater, "NaN"},
		{"an unknown alternative is an error", []float64{1}, []float64{2}, mwu.Alternative(9), "unknown alternative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mwu.Test(tt.x, tt.y, tt.alt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := mwu.Test(nil, nil, mwu.Greater); !errors.Is(err, mwu.ErrEmpty) {
		t.Errorf("error %v, want ErrEmpty", err)
	}
	got, err := mwu.Test([]float64{3, 3, 3}, []float64{3, 3}, mwu.Greater)
	if err != nil || got.P != 1 || got.A != 0.5 {
		t.Errorf("all-equal samples: %+v, %v; want p 1, A 0.5", got, err)
	}
}

func ExampleTest() {
	stable := []float64{4.1, 4.3, 3.9, 4.0, 4.2, 4.4}
	gray := []float64{4.6, 4.9, 4.4, 5.1, 4.8, 4.7}
	r, err := mwu.Test(stable, gray, mwu.Greater)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("U=%.1f p=%.4f A=%.2f\n", r.U, r.P, r.A)
	// Output: U=35.5 p=0.0032 A=0.99
}

package diffcheck_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
)

func TestCompareErrors(t *testing.T) {
	tests := []struct {
		name           string
		se, sn, ge, gn uint64
		outcome        diffcheck.Outcome
		p              float64 // the p-value, within 2%; 0: not checked
		text           string
	}{
		{"7 errors against none in equal loads fail", 0, 6000, 7, 6000, diffcheck.Fail, 0.0078, "gray 7 failed of 6000 requests, stable 0 of 6000: one-sided Fisher exact p = 0.0078 < 0.01"},
		{"4 errors against none do not", 0, 6000, 4, 6000, diffcheck.Pass, 0.0625, ">= 0.01"},
		{"no error at all passes with p 1", 0, 6000, 0, 6000, diffcheck.Pass, 1, "p = 1 >= 0.01"},
		{"fewer errors than stable pass", 10, 6000, 2, 6000, diffcheck.Pass, 0, ""},
		{"as many errors as stable pass", 300, 10000, 300, 10000, diffcheck.Pass, 0, ""},
		{"many more errors than stable fail", 300, 10000, 400, 10000, diffcheck.Fail, 0, ""},
		{"the shares count, not the counts: 8 of 9000 against 2 of 1000", 2, 1000, 8, 9000, diffcheck.Pass, 0, ""},
		{"a track without requests is no data", 0, 0, 3, 100, diffcheck.NoData, 1, "not compared"},
		{"every request failing on gray alone fails", 0, 50, 50, 50, diffcheck.Fail, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := diffcheck.CompareErrors(tt.se, tt.sn, tt.ge, tt.gn, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != tt.outcome || got.Alpha != diffcheck.DefaultErrorAlpha {
				t.Errorf("%s at alpha %g (p = %g), want %s", got.Outcome, got.Alpha, got.P, tt.outcome)
			}
			if tt.p != 0 && math.Abs(got.P-tt.p) > 0.02*tt.p {
				t.Errorf("p = %g, want %g", got.P, tt.p)
			}
			if !(got.P >= 0 && got.P <= 1) {
				t.Errorf("p = %g, want a probability", got.P)
			}
			if !strings.Contains(got.String(), tt.text) {
				t.Errorf("%q, want it to contain %q", got.String(), tt.text)
			}
		})
	}
	for _, bad := range []struct {
		name           string
		se, sn, ge, gn uint64
		alpha          float64
	}{
		{"an alpha over one half", 0, 1, 0, 1, 0.6},
		{"a negative alpha", 0, 1, 0, 1, -0.1},
		{"more errors than requests", 0, 1, 2, 1, 0},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if _, err := diffcheck.CompareErrors(bad.se, bad.sn, bad.ge, bad.gn, bad.alpha); !errors.Is(err, diffcheck.ErrOptions) {
				t.Errorf("CompareErrors: %v, want ErrOptions", err)
			}
		})
	}
}

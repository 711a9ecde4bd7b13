package parity_test

import (
	"testing"

	"github.com/poolparity/poolparity/internal/parity"
)

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		v    parity.Verdict
		want int
	}{
		{parity.Pass, 0}, {parity.Fail, 1}, {parity.NoData, 3}, {parity.Error, 4}, {"", 3},
	} {
		t.Run(string(tc.v), func(t *testing.T) {
			if got := parity.ExitStatus(tc.v); got != tc.want {
				t.Errorf("ExitStatus(%q) = %d, want %d", tc.v, got, tc.want)
			}
		})
	}
}

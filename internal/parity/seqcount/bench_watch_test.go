package seqcount_test

import (
	"math/rand/v2"
	"testing"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// BenchmarkJudgeHour judges an hour of 20 s steps of errors at parity (150 req/s 90/10, K = 9):
// the PASS comes within minutes, and the watches read every step after it (the judge from the
// start and the running watches, about two at parity: a watch stops at its PASS; 9.6 ms an hour
// on the development machine with one watch running, 67 ms with every watch running).
func BenchmarkJudgeHour(b *testing.B) {
	lim := seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.005}}
	rng := rand.New(rand.NewPCG(1, 2))
	st := errorSteps(rng, 180, 150, 0.1, 20, 0.001, 0.001)
	b.ResetTimer()
	for range b.N {
		seqcount.Test{K: 9}.Judge(seqcount.Proportion, lim, st)
	}
}

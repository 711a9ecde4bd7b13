package countsim_test

import (
	"fmt"
	"time"

	"github.com/poolparity/poolparity/hack/verdicteval/countsim"
)

func ExampleWilson() {
	lo, hi := countsim.Wilson(2, 600)
	fmt.Printf("2 false FAILs in 600 rollouts: [%.2f%%, %.2f%%]\n", 100*lo, 100*hi)
	// Output: 2 false FAILs in 600 rollouts: [0.09%, 1.21%]
}

func ExampleSummarize() {
	m := time.Minute
	s := countsim.Summarize([]countsim.Trace{{FailAt: 3 * m, PassAt: -1}, {FailAt: 4 * m, PassAt: -1}, {FailAt: -1, PassAt: 20 * m, FailSLI: -1}})
	fmt.Printf("FAIL %d of %d, median %g min; PASS %d\n", s.Fail.K, s.Runs, s.FailMedian, s.Pass.K)
	// Output: FAIL 2 of 3, median 4 min; PASS 1
}

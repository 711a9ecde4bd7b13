package seqcount_test

import (
	"fmt"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

// Judge twelve 20-second steps of 5xx counts: gray's error ratio is about 2% against stable's
// 0.1%, beyond a floor of +0.1 point. Four SLIs share alpha 0.01, so the bar is 400; the judge
// stops at the first step whose e-value reaches it, here the sixth (MinSteps).
func ExampleTest_Judge() {
	start := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	grayErrors := []float64{6, 9, 7, 4, 8, 6, 5, 7, 10, 6, 4, 8}
	stableErrors := []float64{2, 0, 3, 1, 1, 2, 0, 1, 2, 1, 1, 2}
	var steps []seqcount.Step
	for i := range grayErrors {
		steps = append(steps, seqcount.Step{
			T:      start.Add(time.Duration(i+1) * 20 * time.Second),
			Stable: seqcount.Counts{Num: stableErrors[i], Requests: 1500},
			Gray:   seqcount.Counts{Num: grayErrors[i], Requests: 300},
		})
	}
	lim := seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.0025}}
	r := seqcount.Test{Alpha: 0.01, K: 4}.Judge(seqcount.Proportion, lim, steps)
	fmt.Println(r.Outcome, r.Steps, r.Rejected.Format(time.TimeOnly), r.EFail >= r.Bar)
	fmt.Printf("ratio %.1f, diff %+.4f\n", r.Ratio, r.Diff)
	// Output:
	// FAIL 6 06:02:00 true
	// ratio 22.2, diff +0.0212
}

package parity_test

import (
	"fmt"

	"github.com/poolparity/poolparity/internal/parity"
)

func ExampleCriterion_Evaluate() {
	p99 := parity.Criterion{SLI: "latency p99", Unit: parity.Seconds, Comparison: parity.RatioAtMost, Threshold: 1.10, Floor: 0.005}
	stable, jitter, slow := 0.004, 0.0045, 0.024
	for _, gray := range []float64{jitter, slow} {
		row := p99.Evaluate(&stable, &gray)
		fmt.Printf("gray %s: %s\n", parity.FormatValue(parity.Seconds, gray), row.Verdict)
	}
	// Output:
	// gray 4.50ms: PASS
	// gray 24.00ms: FAIL
}

func ExampleDecide() {
	stable, gray := 0.004, 0.024
	row := parity.Criterion{SLI: "latency p99", Unit: parity.Seconds, Comparison: parity.RatioAtMost, Threshold: 1.10}.Evaluate(&stable, &gray)
	v, reasons := parity.Decide(parity.Decision{Rows: []parity.Row{row}})
	fmt.Println(v, reasons)
	v, reasons = parity.Decide(parity.Decision{Rows: []parity.Row{row}, Quiet: "too little traffic: gray track serves 0.5 req/s (minimum: more than 1)"})
	fmt.Println(v, reasons)
	// Output:
	// FAIL [latency p99 gray/stable 6.00 > 1.10]
	// NO DATA [too little traffic: gray track serves 0.5 req/s (minimum: more than 1)]
}

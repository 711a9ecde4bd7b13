package instrument

import "testing"

// CPUTimed wraps a benchmark body so that it also reports cpu-ns/op: the
// process's CPU time (user+system, from getrusage) per op. On a machine
// shared with other work, wall-clock ns/op includes time the benchmark
// spent waiting for a core; CPU time does not, so its ratios are the
// steadier measure. It is exported for this package's external tests only
// (the file is a _test file).
func CPUTimed(f func(b *testing.B)) func(b *testing.B) {
	return func(b *testing.B) {
		start, ok := processCPU()
		f(b)
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64((end-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

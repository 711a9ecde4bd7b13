package loadgen

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// MaxLatency is the largest latency a Histogram tells apart; a larger one is
// recorded as MaxLatency.
const MaxLatency = 60 * time.Second

// The buckets are log-linear, as HdrHistogram's with two significant
// digits: the values below 2^(histSubBits+1) ns have a bucket each (exact),
// and every power of two above is split into 2^histSubBits buckets of equal
// width, so that a bucket is at most 1/128 (0.78%) of its values wide.
// Values are in nanoseconds; 2^histTopBits ns (68.7 s) is above MaxLatency.
const (
	histSubBits  = 7
	histSubCount = 1 << histSubBits
	histTopBits  = 36
	histBuckets  = (histTopBits - histSubBits + 1) * histSubCount // 3840, 30 KiB of counts
)

// MaxLatency must fit under 2^histTopBits ns: a compile error otherwise.
const _ = uint64(1<<histTopBits - 1 - MaxLatency)

// bucketOf returns the bucket of v ns, v < 2^histTopBits.
func bucketOf(v uint64) int {
	if v < 2*histSubCount {
		return int(v)
	}
	shift := bits.Len64(v) - (histSubBits + 1)
	return shift*histSubCount + int(v>>shift)
}

// highestIn returns the highest value, in ns, that falls in bucket i.
func highestIn(i int) uint64 {
	if i < 2*histSubCount {
		return uint64(i)
	}
	shift := i/histSubCount - 1
	low := uint64(i-shift*histSubCount) << shift
	return low + 1<<shift - 1
}

// Histogram counts durations from 0 to MaxLatency in fixed memory (about
// 30 KiB), with a relative error of at most 1/128 (0.78%): the values below
// 256 ns exactly, the others in log-linear buckets as HdrHistogram with two
// significant digits does. Max and Mean are exact.
//
// The zero Histogram is empty and ready to use. It is safe for concurrent
// use: Record takes no lock and allocates nothing. A Summary taken while
// values are being recorded may miss the records in progress. A Histogram
// must not be copied after first use.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	sum    atomic.Uint64 // ns, exact
	max    atomic.Int64  // ns, exact
}

// Record adds one duration. A negative d counts as 0, one above MaxLatency
// as MaxLatency.
func (h *Histogram) Record(d time.Duration) {
	d = min(max(d, 0), MaxLatency)
	for m := h.max.Load(); int64(d) > m && !h.max.CompareAndSwap(m, int64(d)); m = h.max.Load() {
	}
	h.sum.Add(uint64(d))
	h.counts[bucketOf(uint64(d))].Add(1)
}

// LatencySummary sums up a Histogram. The quantiles are upper bounds: the
// highest value of the bucket the quantile falls in (at most 0.78% above
// the true value), never above Max. All are zero when Count is.
type LatencySummary struct {
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// String returns the summary on one line, e.g. "p50 1.2ms p90 3.4ms ...".
func (s LatencySummary) String() string {
	r := func(d time.Duration) time.Duration {
		if d >= time.Millisecond {
			return d.Round(10 * time.Microsecond)
		}
		return d.Round(time.Microsecond)
	}
	return fmt.Sprintf("p50 %v p90 %v p95 %v p99 %v p99.9 %v max %v mean %v (n=%d)",
		r(s.P50), r(s.P90), r(s.P95), r(s.P99), r(s.P999), r(s.Max), r(s.Mean), s.Count)
}

// snapshot is a copy of a Histogram's counts.
type snapshot struct {
	counts     [histBuckets]uint64
	total, sum uint64
	max        time.Duration
}

func (h *Histogram) snapshot(s *snapshot) {
	s.total = 0
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
		s.total += s.counts[i]
	}
	s.sum, s.max = h.sum.Load(), time.Duration(h.max.Load())
}

// quantile returns the q-quantile (q in [0, 1]) of the snapshot: the highest
// value of the bucket that holds the value of rank ceil(q*total), capped at
// max; zero if the snapshot is empty.
func (s *snapshot) quantile(q float64) time.Duration {
	if s.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(s.total)))
	rank = min(max(rank, 1), s.total)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(highestIn(i)), s.max)
		}
	}
	return s.max // counts recorded after max was read
}

// Quantile returns the q-quantile (q in [0, 1]) of the recorded durations,
// as LatencySummary's quantiles are; zero if none was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	var s snapshot
	h.snapshot(&s)
	return s.quantile(q)
}

// Summary returns the count, mean, max and quantiles of the recorded
// durations.
func (h *Histogram) Summary() LatencySummary {
	var s snapshot
	h.snapshot(&s)
	if s.total == 0 {
		return LatencySummary{}
	}
	return LatencySummary{
		Count: s.total,
		Mean:  time.Duration(s.sum / s.total),
		P50:   s.quantile(0.50),
		P90:   s.quantile(0.90),
		P95:   s.quantile(0.95),
		P99:   s.quantile(0.99),
		P999:  s.quantile(0.999),
		Max:   s.max,
	}
}

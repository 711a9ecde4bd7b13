// Package paritytest simulates, for the tests of the count-based judge and
// of its callers, the raw series a Prometheus evaluating the
// poolparity.counts rules stores: per pod and track, cumulative request,
// 5xx, CPU, heap and response-size counters and the latency histogram's
// buckets, one sample per rule evaluation. It is deterministic given its
// *rand.Rand and reads no global state.
package paritytest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
)

// Bounds are the service's latency buckets (promexport.DurationBuckets).
var Bounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// The count rules the simulation answers, by the name the catalog's count
// inputs read (catalog.CountInputs).
const (
	RequestsRule  = catalog.CountRequestsRule
	ErrorsRule    = "job_gray_status_pod:http_request_errors:total"
	BucketsRule   = "job_gray_status_pod_le:http_request_duration_seconds_bucket:total"
	CPURule       = "job_gray_status_pod:process_cpu_seconds:total"
	HeapRule      = "job_gray_status_pod:go_heap_allocs_bytes:total"
	SizeCountRule = "job_gray_status_pod:http_response_size_bytes_count:total"
	SizeSumRule   = "job_gray_status_pod:http_response_size_bytes_sum:total"
)

// Track is how one simulated track serves: its pods, requests per pod and
// step, and per request its 5xx chance, latency, CPU, heap and response
// bytes; and the faults it shows.
type Track struct {
	// Status is its gray_status label ("false", "true").
	Status string
	// Pods is how many pods serve it; PerPodStep the mean requests of one
	// pod in one step (Poisson-like noise around it).
	Pods       int
	PerPodStep float64
	// ErrRate is a request's chance of a 5xx.
	ErrRate float64
	// Latency is the median latency in seconds (log-normal, sigma 0.47:
	// p99 about 3x the median); LatencyMult multiplies every latency (1 or
	// 0: none).
	Latency, LatencyMult float64
	// CPU, Heap and Resp are a request's CPU seconds, heap bytes and
	// response bytes (2% noise per step).
	CPU, Heap, Resp float64
	// NaNAt and ResetAt put a NaN sample in the requests counter and reset
	// every counter of pod 0 at that step; 0 for none.
	NaNAt, ResetAt int
	// LateStart is the first step with requests (a pod still starting, a
	// load not yet arrived); 0 for the first.
	LateStart int
}

// Counters returns tr's series of every count rule for steps steps of the
// given length ending at end, by rule name: cumulative per pod (labels
// gray_status, pod, job="poolparity"; the buckets' le too), steps+1
// samples each, as Prometheus stores the rule's evaluations.
func Counters(rng *rand.Rand, tr Track, end time.Time, steps int, step time.Duration) map[string]model.Matrix {
	out := map[string]model.Matrix{}
	norm := func(mean, sd float64) float64 { return math.Max(0, mean+sd*rng.NormFloat64()) }
	mult := tr.LatencyMult
	if mult == 0 {
		mult = 1
	}
	for p := range tr.Pods {
		pod := model.LabelValue(tr.Status + "-" + strconv.Itoa(p))
		metric := func(name string) model.Metric {
			return model.Metric{model.MetricNameLabel: model.LabelValue(name), "gray_status": model.LabelValue(tr.Status), "pod": pod, "job": "poolparity"}
		}
		var reqs, errs, cpu, heap, resp float64
		buckets := make([]float64, len(Bounds)+1)
		series := map[string]*model.SampleStream{}
		var order []string
		add := func(key string, m model.Metric, t time.Time, v float64) {
			s, ok := series[key]
			if !ok {
				s = &model.SampleStream{Metric: m}
				series[key] = s
				order = append(order, key)
			}
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
		}
		for i := 0; i <= steps; i++ {
			t := end.Add(-time.Duration(steps-i) * step)
			if i > 0 {
				if p == 0 && tr.ResetAt == i {
					reqs, errs, cpu, heap, resp = 0, 0, 0, 0, 0
					clear(buckets)
				}
				n := math.Round(norm(tr.PerPodStep, math.Sqrt(tr.PerPodStep)))
				if i < tr.LateStart {
					n = 0
				}
				reqs += n
				errs += math.Round(norm(n*tr.ErrRate, math.Sqrt(n*tr.ErrRate)))
				cpu += n * tr.CPU * (1 + 0.02*rng.NormFloat64())
				heap += n * tr.Heap * (1 + 0.02*rng.NormFloat64())
				resp += n * tr.Resp * (1 + 0.02*rng.NormFloat64())
				for range int(n) {
					l := tr.Latency * mult * math.Exp(0.47*rng.NormFloat64())
					for j, b := range Bounds {
						if l <= b {
							buckets[j]++
						}
					}
					buckets[len(Bounds)]++
				}
			}
			v := func(x float64) float64 {
				if tr.NaNAt > 0 && tr.NaNAt == i && p == 0 {
					return math.NaN()
				}
				return x
			}
			add("r", metric(RequestsRule), t, v(reqs))
			add("e", metric(ErrorsRule), t, errs)
			add("c", metric(CPURule), t, cpu)
			add("h", metric(HeapRule), t, heap)
			// The response-size histogram observes every request: its _count is the requests.
			add("sc", metric(SizeCountRule), t, reqs)
			add("ss", metric(SizeSumRule), t, resp)
			for j := range buckets {
				le := "+Inf"
				if j < len(Bounds) {
					le = strconv.FormatFloat(Bounds[j], 'g', -1, 64)
				}
				m := metric(BucketsRule)
				m["le"] = model.LabelValue(le)
				add("b"+le, m, t, buckets[j])
			}
		}
		for _, key := range order {
			s := series[key]
			name := string(s.Metric[model.MetricNameLabel])
			out[name] = append(out[name], s)
		}
	}
	return out
}

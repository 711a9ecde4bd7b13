package countsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/poolparity/poolparity/internal/parity"
)

// Bounds are the service's latency histogram bounds (le), seconds, without +Inf.
var Bounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// The series of a pod, in PodCounters.Values: the buckets (index j is le=Bounds[j]) first.
const (
	// SeriesCount is http_request_duration_seconds_count.
	SeriesCount = iota + 12
	// SeriesErrors is the 5xx counter.
	SeriesErrors
	// SeriesCPU is process_cpu_seconds_total.
	SeriesCPU
	// SeriesHeap is go_gc_heap_allocs_bytes_total.
	SeriesHeap
	// NumSeries is how many series a pod has.
	NumSeries
)

// Timing is when a run scrapes and how long it lasts.
type Timing struct {
	// Scrape is the scrape interval; Lead how long stable runs alone before the gray starts;
	// Rollout how long both run after it.
	Scrape, Lead, Rollout time.Duration
	// Start is the first scrape's time.
	Start time.Time
}

// DefaultTiming is 15 s scrapes, a lead of the controller's count history (parity.CountHistory,
// 30 minutes: the count judge reads stable's steps over it, as the controller does) and a
// 60-minute rollout.
func DefaultTiming() Timing {
	return Timing{Scrape: 15 * time.Second, Lead: parity.CountHistory, Rollout: time.Hour, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// scrapes returns the number of scrapes of a run (the first at Start) and the gray's first.
func (t Timing) scrapes() (n, grayFirst int) {
	return int((t.Lead+t.Rollout)/t.Scrape) + 1, int(t.Lead / t.Scrape)
}

// At returns the time of scrape i.
func (t Timing) At(i int) time.Time { return t.Start.Add(time.Duration(i) * t.Scrape) }

// GrayStart is when the gray starts: its first scrape, with its counters at zero.
func (t Timing) GrayStart() time.Time { return t.Start.Add(t.Lead) }

// PodCounters is one pod's cumulative series as Prometheus scrapes them.
type PodCounters struct {
	// Name is the pod's name.
	Name string
	// First is the index of the pod's first scrape; Values[s][i] is series s at scrape First+i.
	First  int
	Values [NumSeries][]float64
}

// Run is one simulated rollout: each track's pods' counters.
type Run struct {
	// Stable and Gray are the tracks' pods.
	Stable, Gray []PodCounters
	// Reset describes the counter reset of the run ("" when none).
	Reset string
}

// Setup is one cell's simulation: the service, its noise and traffic, the gray's scenario, and
// the share of runs in which a pod restarts (its counters reset) at a random scrape.
type Setup struct {
	Service    Service
	Model      Model
	Traffic    Traffic
	Scenario   Scenario
	Timing     Timing
	ResetShare float64
}

// ar1 is a stationary AR(1) process sampled every scrape.
type ar1 struct{ x, phi, innov float64 }

func newAR1(rng *rand.Rand, sd, perMinute float64, scrape time.Duration) ar1 {
	if sd <= 0 {
		return ar1{}
	}
	phi := 0.0
	if perMinute > 0 {
		phi = math.Pow(perMinute, scrape.Seconds()/60)
	}
	return ar1{x: sd * rng.NormFloat64(), phi: phi, innov: sd * math.Sqrt(1-phi*phi)}
}

func (a *ar1) next(rng *rand.Rand) float64 {
	if a.innov > 0 {
		a.x = a.phi*a.x + a.innov*rng.NormFloat64()
	}
	return a.x
}

// trackState is one track's noise state during a run.
type trackState struct {
	gray          bool
	lat, cpu, mem ar1
	pods          []podState
	tail          tailShift // gray's tail-only shift (the scenario's)
}

// podState is one pod's lasting offsets and running counters.
type podState struct {
	lat, cpu, mem float64 // lasting log offsets
	cum           [NumSeries]float64
	out           *PodCounters
}

// Simulate draws one run of su from rng.
func Simulate(su Setup, rng *rand.Rand) (Run, error) {
	if err := su.check(); err != nil {
		return Run{}, err
	}
	n, grayFirst := su.Timing.scrapes()
	var run Run
	tracks := [2]*trackState{su.newTrack(rng, false, &run), su.newTrack(rng, true, &run)}
	common := newAR1(rng, su.Model.Common, su.Model.CommonPhi, su.Timing.Scrape)
	resetTrack, resetPod, resetAt := su.pickReset(rng, &run, n, grayFirst)
	for i := 1; i < n; i++ {
		c := common.next(rng)
		for ti, t := range tracks {
			if t.gray && i <= grayFirst {
				continue
			}
			su.scrape(rng, t, c, i, ti == resetTrack && i == resetAt, resetPod)
		}
	}
	return run, nil
}

// check refuses a timing the simulation cannot run.
func (tm Timing) check() error {
	if tm.Scrape <= 0 || tm.Lead < tm.Scrape || tm.Rollout < tm.Scrape {
		return fmt.Errorf("timing: scrape %s, lead %s and rollout %s must be positive, the lead and rollout at least a scrape", tm.Scrape, tm.Lead, tm.Rollout)
	}
	return nil
}

// check refuses a setup the simulation cannot run.
func (su Setup) check() error {
	tr, tm := su.Traffic, su.Timing
	if err := tm.check(); err != nil {
		return err
	}
	switch {
	case tr.StablePods < 1 || tr.GrayPods < 1:
		return fmt.Errorf("traffic %q: each track needs a pod (stable %d, gray %d)", tr.Name, tr.StablePods, tr.GrayPods)
	case !(tr.RPS > 0) || !(tr.GrayShare > 0 && tr.GrayShare < 1):
		return fmt.Errorf("traffic %q: rate %g and gray share %g must be above 0 (the share below 1)", tr.Name, tr.RPS, tr.GrayShare)
	case !(su.Service.Median > 0) || !(su.Service.P99 > su.Service.Median):
		return fmt.Errorf("service: median %g and p99 %g must be positive and p99 above the median", su.Service.Median, su.Service.P99)
	}
	return nil
}

// newTrack draws a track's processes and pods and adds its pods to run.
func (su Setup) newTrack(rng *rand.Rand, gray bool, run *Run) *trackState {
	m, sc := su.Model, su.Timing.Scrape
	t := &trackState{gray: gray, lat: newAR1(rng, m.Drift, m.Phi, sc), cpu: newAR1(rng, m.CostDrift, m.Phi, sc), mem: newAR1(rng, m.CostDrift, m.Phi, sc)}
	if gray {
		t.tail = newTailShift(su.Scenario.TailShare, su.Scenario.TailMult, m.T3)
	}
	n, name, first := su.Traffic.StablePods, "stable", 0
	dst := &run.Stable
	if gray {
		n, name = su.Traffic.GrayPods, "gray"
		_, first = su.Timing.scrapes()
		dst = &run.Gray
	}
	*dst = make([]PodCounters, n)
	total, _ := su.Timing.scrapes()
	for i := range n {
		pc := &(*dst)[i]
		pc.Name, pc.First = fmt.Sprintf("%s-%d", name, i), first
		for s := range pc.Values {
			pc.Values[s] = make([]float64, 1, total-first)
		}
		t.pods = append(t.pods, podState{lat: m.PodSD * rng.NormFloat64(), cpu: m.PodSD * rng.NormFloat64(), mem: m.PodSD * rng.NormFloat64(), out: pc})
	}
	return t
}

// pickReset chooses, in ResetShare of the runs, a pod of either track that restarts at a scrape
// of the rollout; -1 when none.
func (su Setup) pickReset(rng *rand.Rand, run *Run, n, grayFirst int) (track, pod, at int) {
	if !(rng.Float64() < su.ResetShare) {
		return -1, -1, -1
	}
	track = rng.IntN(2)
	pods := su.Traffic.StablePods
	if track == 1 {
		pods = su.Traffic.GrayPods
	}
	pod, at = rng.IntN(pods), grayFirst+2+rng.IntN(max(1, n-grayFirst-2))
	name := [2]string{"stable", "gray"}[track]
	run.Reset = fmt.Sprintf("%s-%d restarts %s into the rollout", name, pod, su.Timing.At(at).Sub(su.Timing.GrayStart()))
	return track, pod, at
}

// scrape adds one scrape interval of requests to each pod of t (common is the shared log scale);
// reset restarts pod resetPod first.
func (su Setup) scrape(rng *rand.Rand, t *trackState, common float64, i int, reset bool, resetPod int) {
	m, svc, sc := su.Model, su.Service, su.Scenario
	lat, cpu, mem := t.lat.next(rng), t.cpu.next(rng), t.mem.next(rng)
	stall := m.StallProb > 0 && rng.Float64() < m.StallProb
	rate := su.Traffic.RPS * (1 - su.Traffic.GrayShare) / float64(len(t.pods))
	latMul, cpuMul, memMul, errs := 1.0, 1.0, 1.0, svc.Errors
	var tail tailShift
	if t.gray {
		rate = su.Traffic.RPS * su.Traffic.GrayShare / float64(len(t.pods))
		if !su.Timing.At(i).Before(su.Timing.GrayStart().Add(sc.From)) {
			latMul, cpuMul, memMul, errs = sc.Latency, sc.CPU, sc.Heap, errs+sc.Errors
			tail = t.tail
		}
	}
	for pi := range t.pods {
		p := &t.pods[pi]
		if reset && pi == resetPod {
			p.cum = [NumSeries]float64{}
		}
		n := poisson(rng, rate*su.Timing.Scrape.Seconds())
		median := svc.Median * latMul * math.Exp(lat+common+p.lat)
		su.addBuckets(rng, p, n, median, stall, tail)
		p.cum[SeriesCount] += n
		p.cum[SeriesErrors] += binomial(rng, n, errs)
		p.cum[SeriesCPU] += costSum(rng, n, svc.CPU*cpuMul*math.Exp(cpu+common+p.cpu+m.CPUNoise*rng.NormFloat64()), svc.CPUCV)
		p.cum[SeriesHeap] += costSum(rng, n, svc.Heap*memMul*math.Exp(mem+common+p.mem+m.HeapNoise*rng.NormFloat64()), svc.HeapCV)
		for s := range p.cum {
			p.out.Values[s] = append(p.out.Values[s], p.cum[s])
		}
	}
}

// costSum draws the sum of n per-request costs of mean mu and coefficient of variation cv: the
// normal approximation of the sum, never below zero.
func costSum(rng *rand.Rand, n, mu, cv float64) float64 {
	if n <= 0 {
		return 0
	}
	return math.Max(0, n*mu+math.Sqrt(n)*cv*mu*rng.NormFloat64())
}

// tailShift is a tail-only regression: the slowest share of requests take mult times as long
// (share 0: none); z is the (1-share) quantile of the standardised log latency.
type tailShift struct{ share, mult, z float64 }

// newTailShift returns the shift of the slowest share by mult under the model's distribution.
func newTailShift(share, mult float64, t3 bool) tailShift {
	if share <= 0 {
		return tailShift{}
	}
	z := normQuantile(1 - share)
	if t3 {
		z = t3Quantile(1 - share)
	}
	return tailShift{share: share, mult: mult, z: z}
}

// cdf is the latency CDF at le of requests whose CDF without the shift is f and whose
// (1-share) quantile is q: a request at most q is unchanged, one above q takes mult times as
// long, so F'(le) = F(min(le, q)) + max(0, F(le/mult) - F(q)).
func (ts tailShift) cdf(le, q float64, f func(float64) float64) float64 {
	if ts.share <= 0 || ts.mult <= 0 {
		return f(le)
	}
	fq := 1 - ts.share
	return f(math.Min(le, q)) + math.Max(0, f(le/ts.mult)-fq)
}

// addBuckets splits n requests over the histogram's buckets by sequential binomials over the
// bucket probabilities of the latency distribution of that median (a stall slows a share of
// them; tail shifts the slowest share) and adds them to p's cumulative buckets.
func (su Setup) addBuckets(rng *rand.Rand, p *podState, n, median float64, stall bool, tail tailShift) {
	m := su.Model
	sigma := su.Service.sigma(m.T3)
	left, prevF, below := n, 0.0, 0.0
	cdf := func(le float64) float64 { return latencyCDF(le, median, sigma, m.T3) }
	q := median * math.Exp(sigma*tail.z)
	for j, le := range Bounds {
		f := tail.cdf(le, q, cdf)
		if stall {
			f = (1-m.StallShare)*f + m.StallShare*latencyCDF(le, median*m.StallFactor, sigma, m.T3)
		}
		var c float64
		if prevF < 1 && left > 0 {
			c = binomial(rng, left, (f-prevF)/(1-prevF))
		}
		left -= c
		below += c
		prevF = f
		p.cum[j] += below
	}
}

// latencyCDF is the chance that a request takes at most le seconds when log latency is
// log(median) + sigma Z, Z normal or Student's t with 3 degrees of freedom.
func latencyCDF(le, median, sigma float64, t3 bool) float64 {
	z := math.Log(le/median) / sigma
	if t3 {
		return t3CDF(z)
	}
	return normCDF(z)
}

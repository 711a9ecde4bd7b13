package countsim

import (
	"math"
	"time"
)

// Model is a noise model: what makes the simulated counts vary beyond the sampling of independent
// requests. Every sigma is on the natural-log scale. A zero Model is the iid model.
type Model struct {
	// Name is the model's name in the report (iid, corpus, ar1, ...).
	Name string
	// Drift is the stationary sd of each track's log latency scale, an AR(1) process whose
	// minute-to-minute correlation is Phi; CostDrift the same for each track's log CPU and log
	// heap cost per request (independent processes, same Phi).
	Drift, CostDrift, Phi float64
	// Common is the stationary sd of a log latency and cost scale shared by both tracks, an AR(1)
	// process of minute-to-minute correlation CommonPhi.
	Common, CommonPhi float64
	// PodSD is the sd of each pod's lasting log offset of latency, CPU and heap cost (drawn once
	// per run, independently per metric).
	PodSD float64
	// StallProb is the chance per scrape and track of a stall that slows StallShare of that
	// scrape's requests StallFactor times.
	StallProb, StallShare, StallFactor float64
	// CostNoise is the sd of a per-scrape, per-pod log noise of CPU and of heap cost.
	CPUNoise, HeapNoise float64
	// T3 draws log latency from Student's t with 3 degrees of freedom instead of a normal, with
	// the same median and p99.
	T3 bool
}

// PerMinuteSD is the per-minute sample sd of log p99 in the synthetic corpus, the unit of the
// pod-offset models: pod018 has lasting pod offsets of 0.18 of it, pod05 of 0.5.
const PerMinuteSD = 0.19

// Models returns the named noise models, iid first.
func Models() []Model {
	return []Model{
		{Name: "iid"},
		{Name: "corpus", Drift: 0.05, Phi: 0.5, PodSD: 0.02, StallProb: 0.01, StallShare: 0.3, StallFactor: 3, CPUNoise: 0.05, HeapNoise: 0.02},
		{Name: "ar1", Drift: PerMinuteSD * 0.5, CostDrift: PerMinuteSD * 0.5, Phi: 0.5},
		{Name: "pod018", PodSD: 0.18 * PerMinuteSD},
		{Name: "pod05", PodSD: 0.5 * PerMinuteSD},
		{Name: "common", Common: 0.2, CommonPhi: 0.5},
		{Name: "t3", T3: true},
	}
}

// Traffic is a traffic row: the total request rate and how it splits over the tracks' pods.
type Traffic struct {
	// Name is the row's name in the report.
	Name string
	// RPS is the total request rate, requests per second, of both tracks; GrayShare the gray's share.
	RPS, GrayShare float64
	// StablePods and GrayPods are the pods per track; each pod takes an equal share of its track's.
	StablePods, GrayPods int
}

// Traffics returns the traffic rows.
func Traffics() []Traffic {
	return []Traffic{
		{Name: "150 req/s 90/10", RPS: 150, GrayShare: 0.1, StablePods: 4, GrayPods: 1},
		{Name: "150 req/s 50/50", RPS: 150, GrayShare: 0.5, StablePods: 2, GrayPods: 2},
		{Name: "20 req/s 90/10", RPS: 20, GrayShare: 0.1, StablePods: 4, GrayPods: 1},
	}
}

// Service is the simulated service's level: what stable serves.
type Service struct {
	// Median and P99 of the latency, seconds, before any scale.
	Median, P99 float64
	// Errors is the 5xx ratio.
	Errors float64
	// CPU is the CPU seconds per request, CPUCV the per-request coefficient of variation; Heap and
	// HeapCV the same for heap bytes allocated.
	CPU, CPUCV, Heap, HeapCV float64
}

// DefaultService is the synthetic corpus' service: median 20 ms, p99 60 ms, 0.1% errors, 50 KB
// allocated per request; 1.4 ms of CPU per request (what the catalog's CPU floor of 100 µs was set
// against) so that the CPU threshold (1.15), not the floor, is the margin.
func DefaultService() Service {
	return Service{Median: 0.020, P99: 0.060, Errors: 0.001, CPU: 0.0014, CPUCV: 1, Heap: 50000, HeapCV: 0.5}
}

// sigma returns the log-latency scale that puts P99 at the 0.99 quantile (normal or t3).
func (s Service) sigma(t3 bool) float64 {
	if t3 {
		return math.Log(s.P99/s.Median) / t3Q99
	}
	return math.Log(s.P99/s.Median) / z99
}

// Scenario is what differs in the gray track, from its start: multipliers of its latency, CPU and
// heap per request, and points added to its error ratio.
type Scenario struct {
	// Key names the scenario for the targets (aa, boundary, margin, margin15, p99+20, p99+40,
	// errors+0.5); Name is its name in the report.
	Key, Name string
	// Kind says what the scenario measures.
	Kind ScenarioKind
	// Latency, CPU and Heap multiply gray's (1: as stable); Errors is added to its 5xx ratio.
	Latency, CPU, Heap, Errors float64
	// TailShare and TailMult: gray's slowest TailShare of requests take TailMult times as long
	// (0: none), the rest of its distribution as stable's (a tail-only regression).
	TailShare, TailMult float64
	// From is when gray starts to differ from stable, after the gray's start (0: from it); a
	// late regression's times are read from it (a FAIL before it counts at 0).
	From time.Duration
}

// ScenarioKind says what a scenario measures.
type ScenarioKind int

// The kinds of scenario.
const (
	// Parity: gray as stable (A/A); measures false FAIL and time to PASS.
	Parity ScenarioKind = iota
	// Boundary: gray at the FAIL boundary (the floor) of every SLI; measures false FAIL.
	Boundary
	// Margin: gray at or beyond the PASS margin; measures false PASS.
	Margin
	// Regression: gray worse than the threshold; measures time to FAIL.
	Regression
)

// Scenarios returns the scenarios for svc, with the catalog's floors and thresholds: the boundary
// puts every SLI at its floor at once (latency x(1+5ms/p99), p95 then within its own floor).
func Scenarios(svc Service) []Scenario {
	return []Scenario{
		{Key: "aa", Name: "A/A", Kind: Parity, Latency: 1, CPU: 1, Heap: 1},
		{Key: "boundary", Name: "boundary (every SLI at its floor)", Kind: Boundary, Latency: 1 + 0.005/svc.P99, CPU: 1 + 0.0001/svc.CPU, Heap: 1 + 1024/svc.Heap, Errors: 0.001},
		{Key: "margin", Name: "latency at the margin (x1.10)", Kind: Margin, Latency: 1.10, CPU: 1, Heap: 1},
		{Key: "margin15", Name: "latency at 1.5x the margin (x1.15)", Kind: Margin, Latency: 1.15, CPU: 1, Heap: 1},
		{Key: "p99+20", Name: "p99 +20%", Kind: Regression, Latency: 1.2, CPU: 1, Heap: 1},
		{Key: "p99+40", Name: "p99 +40%", Kind: Regression, Latency: 1.4, CPU: 1, Heap: 1},
		{Key: "errors+0.5", Name: "errors +0.5 points", Kind: Regression, Latency: 1, CPU: 1, Heap: 1, Errors: 0.005},
		{Key: "late-p99+40", Name: "p99 +40% from minute 20 (times from minute 20)", Kind: Regression, Latency: 1.4, CPU: 1, Heap: 1, From: 20 * time.Minute},
		{Key: "late-errors+0.5", Name: "errors +0.5 points from minute 20 (times from minute 20)", Kind: Regression, Latency: 1, CPU: 1, Heap: 1, Errors: 0.005, From: 20 * time.Minute},
		{Key: "tail3x1.4", Name: "tail only: slowest 3% x1.4", Kind: Regression, Latency: 1, CPU: 1, Heap: 1, TailShare: 0.03, TailMult: 1.4},
		{Key: "tail1x2", Name: "tail only: slowest 1% x2", Kind: Regression, Latency: 1, CPU: 1, Heap: 1, TailShare: 0.01, TailMult: 2},
	}
}

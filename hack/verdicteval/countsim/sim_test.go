package countsim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func testSetup(m Model, reset float64) Setup {
	svc := DefaultService()
	return Setup{Service: svc, Model: m, Traffic: Traffics()[0], Scenario: Scenarios(svc)[0], Timing: DefaultTiming(), ResetShare: reset}
}

func TestSimulatedCountersAreCumulativeAndConsistent(t *testing.T) {
	for _, m := range Models() {
		t.Run("model "+m.Name+" gives monotone counters whose buckets add up to the count", func(t *testing.T) {
			run, err := Simulate(testSetup(m, 0), rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range append(run.Stable, run.Gray...) {
				checkPod(t, p, m.T3)
			}
		})
	}
}

// checkPod checks a pod's series; heavy (t3) tails may put a request beyond 10 s (+Inf only).
func checkPod(t *testing.T, p PodCounters, heavy bool) {
	t.Helper()
	for s := range p.Values {
		v := p.Values[s]
		if v[0] != 0 {
			t.Fatalf("%s series %d starts at %g, not 0", p.Name, s, v[0])
		}
		for k := 1; k < len(v); k++ {
			if v[k] < v[k-1] {
				t.Fatalf("%s series %d falls at scrape %d: %g -> %g", p.Name, s, k, v[k-1], v[k])
			}
		}
	}
	for k := range p.Values[SeriesCount] {
		for j := 1; j < len(Bounds); j++ {
			if p.Values[j][k] < p.Values[j-1][k] {
				t.Fatalf("%s scrape %d: bucket le=%g (%g) below le=%g (%g)", p.Name, k, Bounds[j], p.Values[j][k], Bounds[j-1], p.Values[j-1][k])
			}
		}
		// No request of a 20 ms log-normal takes 10 s: the last finite bucket holds the whole
		// count; a t3 tail leaves at most a few in +Inf.
		if last, n := p.Values[len(Bounds)-1][k], p.Values[SeriesCount][k]; last > n || (!heavy && last != n) || n-last > 1e-3*n+3 {
			t.Fatalf("%s scrape %d: le=10 holds %g of %g requests", p.Name, k, last, n)
		}
		if e := p.Values[SeriesErrors][k]; e > p.Values[SeriesCount][k] {
			t.Fatalf("%s scrape %d: %g errors of %g requests", p.Name, k, e, p.Values[SeriesCount][k])
		}
	}
	if p.Values[SeriesCount][len(p.Values[SeriesCount])-1] == 0 {
		t.Fatalf("%s served nothing", p.Name)
	}
}

func TestARestartResetsOnePodsCounters(t *testing.T) {
	run, err := Simulate(testSetup(Model{Name: "iid"}, 1), rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if run.Reset == "" {
		t.Fatal("a reset share of 1 restarted no pod")
	}
	drops := 0
	for _, p := range append(run.Stable, run.Gray...) {
		v := p.Values[SeriesCount]
		for k := 1; k < len(v); k++ {
			if v[k] < v[k-1] {
				drops++
			}
		}
	}
	if drops != 1 {
		t.Fatalf("%d drops of a _count series, want 1 (%s)", drops, run.Reset)
	}
}

// probitP99 estimates the p99 from the fractions at or below 50 and 100 ms, interpolating the
// quantile function inv (of the model's tails) linearly in log latency: exact for the model.
func probitP99(run Run, inv func(float64) float64, q float64) float64 {
	var n, below [2]float64
	for _, p := range run.Stable {
		last := len(p.Values[SeriesCount]) - 1
		n[0] += p.Values[SeriesCount][last]
		below[0] += p.Values[5][last] // le 0.05
		below[1] += p.Values[6][last] // le 0.1
	}
	z0, z1 := inv(below[0]/n[0]), inv(below[1]/n[0])
	l0, l1 := math.Log(0.05), math.Log(0.1)
	return math.Exp(l0 + (inv(q)-z0)*(l1-l0)/(z1-z0))
}

func TestSimulatedP99IsTheService(t *testing.T) {
	cases := []struct {
		name string
		m    Model
		inv  func(float64) float64
	}{
		{"the iid model's p99 is 60 ms", Model{Name: "iid"}, normQuantile},
		{"the t3 model's p99 is 60 ms", Model{Name: "t3", T3: true}, t3Quantile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			su := testSetup(c.m, 0)
			su.Traffic.RPS = 2000
			run, err := Simulate(su, rand.New(rand.NewPCG(5, 6)))
			if err != nil {
				t.Fatal(err)
			}
			if got := probitP99(run, c.inv, 0.99); math.Abs(got-0.060) > 0.002 {
				t.Fatalf("p99 %.4f s, want 0.060 +- 0.002", got)
			}
			if got := probitP99(run, c.inv, 0.5); math.Abs(got-0.020) > 0.002 {
				t.Fatalf("median %.4f s, want 0.020 +- 0.002", got)
			}
		})
	}
}

func TestAR1HasItsMinuteCorrelation(t *testing.T) {
	for _, phi := range []float64{0.5, 0.8} {
		t.Run("a minute correlation of "+ftoa(phi)+" holds over four 15 s scrapes", func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			a := newAR1(rng, 0.2, phi, 15*time.Second)
			xs := make([]float64, 400000)
			for i := range xs {
				xs[i] = a.next(rng)
			}
			if got := lagCorr(xs, 4); math.Abs(got-phi) > 0.02 {
				t.Fatalf("lag-1-minute correlation %.3f, want %g", got, phi)
			}
			if got := lagCorr(xs, 1); math.Abs(got-math.Pow(phi, 0.25)) > 0.02 {
				t.Fatalf("lag-1-scrape correlation %.3f, want %.3f", got, math.Pow(phi, 0.25))
			}
			var m moments
			for _, x := range xs {
				m.add(x)
			}
			if math.Abs(m.sd()-0.2) > 0.01 {
				t.Fatalf("sd %.4f, want 0.2", m.sd())
			}
		})
	}
}

func ftoa(f float64) string { return time.Duration(f * float64(time.Second)).String() }

func lagCorr(xs []float64, lag int) float64 {
	var a, b, ab, aa, bb, n float64
	for i := lag; i < len(xs); i++ {
		x, y := xs[i-lag], xs[i]
		a, b, ab, aa, bb, n = a+x, b+y, ab+x*y, aa+x*x, bb+y*y, n+1
	}
	cov := ab/n - a/n*b/n
	return cov / math.Sqrt((aa/n-a/n*a/n)*(bb/n-b/n*b/n))
}

func TestSimulateRefusesABadSetup(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Setup)
	}{
		{"a track without pods", func(s *Setup) { s.Traffic.GrayPods = 0 }},
		{"no traffic", func(s *Setup) { s.Traffic.RPS = 0 }},
		{"a gray share of 1", func(s *Setup) { s.Traffic.GrayShare = 1 }},
		{"a rollout shorter than a scrape", func(s *Setup) { s.Timing.Rollout = time.Second }},
		{"a p99 below the median", func(s *Setup) { s.Service.P99 = 0.01 }},
	}
	for _, c := range cases {
		t.Run(c.name+" is an error", func(t *testing.T) {
			su := testSetup(Model{}, 0)
			c.edit(&su)
			if _, err := Simulate(su, rand.New(rand.NewPCG(1, 1))); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

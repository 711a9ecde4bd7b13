package seqcount_test

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/parity/seqcount"
)

var update = flag.Bool("update", false, "rewrite testdata/verdicts.golden from the judge as it is")

// TestVerdictsGolden holds every number of the judge on a fixed corpus that exercises each of its
// parts: the PASS test, the FAIL test and its prior, the watch after a PASS, the FAIL test
// conditioned on the steps' events under a shared drift, the pod-offset allowance, and the tail's
// FAIL test and its bar. Per run it records the outcome, the steps used, when the outcome and a
// PASS before a FAIL came, the bar and both e-values. The statistical tests bound the judge's
// error rates and power with intervals; this one fails on any change of a bar, a weight, an
// allowance or a prior, however small its effect on the rates, so that such a change is made on
// purpose (hack/mutants shows each of the four that once survived `make test` caught here). After
// a deliberate change, measure the rates again (docs/verdict-eval*.md) and rewrite the file:
// go test ./internal/parity/seqcount -run TestVerdictsGolden -update.
func TestVerdictsGolden(t *testing.T) {
	var b bytes.Buffer
	for _, sc := range goldenScenarios() {
		rng := rand.New(rand.NewPCG(sc.seed, 59))
		for run := range 40 {
			r := sc.judge(rng)
			fmt.Fprintf(&b, "%s %2d: %s %d steps, at %s, passed %s, bar %.6g, log E fail %.6g, pass %.6g\n",
				sc.name, run, r.Outcome, r.Steps, since(r.Rejected), since(r.Passed), r.Bar, math.Log(r.EFail), math.Log(r.EPass))
		}
	}
	path := filepath.Join("testdata", "verdicts.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	got, wantLines := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
	diffs := 0
	for i := range max(len(got), len(wantLines)) {
		g, w := line(got, i), line(wantLines, i)
		if g != w {
			if diffs < 10 {
				t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
			}
			diffs++
		}
	}
	if diffs > 0 {
		t.Errorf("%d of %d lines differ from %s: the judge's numbers changed (see the test's doc)", diffs, len(wantLines), path)
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(t0).String()
}

type goldenScenario struct {
	name  string
	seed  uint64
	judge func(rng *rand.Rand) seqcount.Result
}

func goldenScenarios() []goldenScenario {
	errLim := seqcount.Limits{Floor: seqcount.Bound{Abs: 0.001}, Margin: seqcount.Bound{Abs: 0.005}}
	errors := func(n, from int, ps, pg float64) func(*rand.Rand) seqcount.Result {
		return func(rng *rand.Rand) seqcount.Result {
			st := append(errorSteps(rng, from, 150, 0.1, 20, ps, ps), errorSteps(rng, n-from, 150, 0.1, 20, ps, pg)...)
			for i := range st {
				st[i].T = t0.Add(stepsOf(i + 1))
			}
			return seqcount.Test{K: 8}.Judge(seqcount.Proportion, errLim, st)
		}
	}
	ratioLim := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.35}, Margin: seqcount.Bound{Rel: 0.45}}
	shared := func(x float64) func(*rand.Rand) seqcount.Result {
		return func(rng *rand.Rand) seqcount.Result {
			all := arSteps(rng, 30+45, 2700, 300, 0.015, x, 0.35, 0, 0.79, 0)
			hist := make([]seqcount.Counts, 30)
			for i := range hist {
				hist[i] = all[i].Stable
			}
			return seqcount.Test{K: 8}.JudgeAfter(seqcount.Proportion, ratioLim, hist, all[30:])
		}
	}
	cpuLim := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.05}, Margin: seqcount.Bound{Rel: 0.25}}
	pods := func(x float64) func(*rand.Rand) seqcount.Result {
		return func(rng *rand.Rand) seqcount.Result {
			off := []float64{1, 1, 1, 1, x}
			for i := range off {
				off[i] *= math.Exp(0.03 * rng.NormFloat64())
			}
			st := make([]seqcount.Step, 60)
			for i := range st {
				st[i] = podStep(rng, off, 4, 150, 0.9)
				st[i].T = t0.Add(stepsOf(i + 1))
			}
			return seqcount.Test{K: 8}.Judge(seqcount.PerRequest, cpuLim, st)
		}
	}
	tail := func(rng *rand.Rand) seqcount.Result {
		// The judged bound's pods alike, the tail's apart: the tail spends half its alpha on the
		// pod-offset allowance and the main test none, so a FAIL reads the tail's bar; gray 1.5
		// times the judged bound's rate climbs to it gradually.
		main, tl := make([]seqcount.Step, 45), make([]seqcount.Step, 45)
		tailOff := []float64{0.5, 1.5, 1, 1, 3}
		for i := range main {
			main[i] = podProportionStep(rng, []float64{1, 1, 1, 1, 1.5}, 4, 0.05)
			tl[i] = podProportionStep(rng, tailOff, 4, 0.003)
			main[i].T, tl[i].T = t0.Add(stepsOf(i+1)), t0.Add(stepsOf(i+1))
		}
		lim := seqcount.Limits{Floor: seqcount.Bound{Rel: 0.25}, Margin: seqcount.Bound{Rel: 0.4}}
		return seqcount.Test{K: 8}.JudgeTail(seqcount.Proportion, lim, nil, main, &seqcount.TailTest{Steps: tl, Limits: lim, Bound: 0.1})
	}
	return []goldenScenario{
		{"errors at parity", 1, errors(90, 90, 0.001, 0.001)},
		{"errors +0.5 point", 2, errors(90, 0, 0.001, 0.006)},
		{"errors +0.5 point from minute 15", 3, errors(135, 45, 0.001, 0.006)},
		{"shared drift at parity", 4, shared(1)},
		{"shared drift, 4x the floor", 5, shared(5.4)},
		{"CPU, pod offsets, parity", 6, pods(1)},
		{"CPU, pod offsets, +30%", 7, pods(1.3)},
		{"tail apart by pod", 8, tail},
	}
}

// podStep draws one 20 s step of CPU per request (1.4 ms, CV 1) over pods with lasting factors
// off, the first ns of them stable's, stable taking share of rps.
func podStep(rng *rand.Rand, off []float64, ns int, rps, share float64) seqcount.Step {
	var st seqcount.Step
	for k, f := range off {
		tr, w := &st.Stable, share/float64(ns)
		if k >= ns {
			tr, w = &st.Gray, (1-share)/float64(len(off)-ns)
		}
		req := math.Max(1, math.Round(rps*20*w+math.Sqrt(rps*20*w)*rng.NormFloat64()))
		num := math.Max(0, 1.4e-3*f*(req+math.Sqrt(req)*rng.NormFloat64()))
		tr.Pods = append(tr.Pods, seqcount.Counts{Pod: fmt.Sprint(k), Num: num, Requests: req})
		tr.Num, tr.Requests = tr.Num+num, tr.Requests+req
	}
	return st
}

// podProportionStep draws one 20 s step of events at rate p times each pod's factor off, 300
// requests per pod, the first ns pods stable's.
func podProportionStep(rng *rand.Rand, off []float64, ns int, p float64) seqcount.Step {
	var st seqcount.Step
	for k, f := range off {
		tr := &st.Stable
		if k >= ns {
			tr = &st.Gray
		}
		num := poisson(rng, 300*p*f)
		tr.Pods = append(tr.Pods, seqcount.Counts{Pod: fmt.Sprint(k), Num: num, Requests: 300})
		tr.Num, tr.Requests = tr.Num+num, tr.Requests+300
	}
	return st
}

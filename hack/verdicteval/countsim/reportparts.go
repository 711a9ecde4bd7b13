package countsim

import (
	"fmt"
	"strings"
)

func writeMethod(b *strings.Builder, cfg Config) {
	tm, svc := cfg.Timing, cfg.Service
	fmt.Fprintf(b, `## How it is measured

Each run is a rollout simulated at the level of the counters Prometheus scrapes from the
service, per pod every %s: the stable track's pods run alone for %s, then the gray's pods start
(their counters from zero) and both run for %s. Per pod and scrape, the requests are Poisson; they
are split over the latency histogram's buckets (le %s and +Inf) by sequential binomials over the
bucket probabilities of the current latency distribution (log-normal, median %g ms and p99 %g ms
before any scale; in the t3 model a Student-t with 3 degrees of freedom of the same median and
p99), times the pod's and track's current scale; 5xx are binomial (%.2g%% of requests); CPU
seconds (%.2g ms per request, coefficient of variation %.2g per request) and heap bytes (%.0f per
request, CV %.2g) are sums of per-request costs drawn as the normal approximation of the sum. No
loop runs per request. In %.0f%% of the runs one pod of either track restarts at a random scrape
of the rollout (its counters reset).

Judges, both looking every %s and every minute from the gray's start, for %s:

- **counts**: the shipped count-based test, parity.JudgeCounts (which parity.Evaluate calls on
  what it reads from Prometheus), on the count rules' samples as Prometheus 3 stores and returns
  them: the rule evaluated every %s step, reading each pod's last scrape, over stable's %s of
  history before the rollout and the rollout so far (a range selector, left-open). Everything
  else is the shipped test's: the garbage checks, the per-pod differences, the limits at stable's
  level over its history (parity.CountLimits; the table below shows them at the nominal level),
  the latency test with its tail, Alpha %g over K = %d SLIs (5 judged), and the watch after a
  PASS. TestEvaluateJudgesWhatTheEvaluationJudges holds parity.Evaluate, served these samples,
  to the same verdicts and e-values.
- **per-minute sequential** (today's judge): per-minute values of both tracks from the same
  counters (histogram_quantile's interpolation of one minute's bucket increases summed over
  pods, 5xx per request with the minute's requests, which its rate bound needs and the controller
  reads through the catalog's CountRule, CPU and heap per request; a restart's drop counted from
  zero), over the
  minutes ending at the last scrape before the look, one minute apart, back to the gray's start,
  judged by parity.SequentialTest (catalog alpha, tau 3) with parity.CriterionOf of the catalog's
  SLIs and k = %d.

A run FAILs at the first look where any SLI FAILs, and PASSes at the first look where every SLI
PASSes, if no FAIL came before. Every run is judged for the whole rollout: "FAIL" counts a FAIL
at any look (also after a PASS: the rate of a rollout that keeps watching). Times are from the
gray's start; medians and 90th percentiles count the runs that never FAILed (PASSed) as never.
Rates carry 95%% Wilson intervals. Each cell has %d runs (A/A, boundary, margin) or %d
(regressions), run i taking seed i mod %d of seeds %s.

**Oracle**: the minutes a fixed-horizon one-sided z-test of the same count contrast (gray's rate
less the boundary at stable's rate, per %s step) would need at alpha/K (%g/%d), knowing its true
mean and the true variance of its sum over the test's horizon. Both are estimated per horizon
across the cell's runs, each run's contrasts divided by stable's level over the run when the
SLI's limits are relative (a z-test is free of that scale), so lasting pod offsets and drift
count as much as they do for a test of that length: an offset that never averages out can keep
the oracle from a target at any horizon ("never": not within the rollout). To FAIL, the SLI
furthest beyond its floor at power 0.5 (for medians) and 0.95 (for "within 10 min"), the test's
critical value at the sd of the same sum with the gray at its floor (the boundary cell of the
model and traffic: counts beyond the floor vary more, which a test of the floor does not pay)
and its power at the cell's own sd; to PASS, the slowest SLI within its margin at power 0.5 and
0.9, both at the cell's sd (no cell holds every SLI at its margin; at parity the sd is the
smaller, so this oracle errs fast). A judge's time is also shown as a multiple of the oracle's.

`, tm.Scrape, tm.Lead, tm.Rollout, boundsText(), 1000*svc.Median, 1000*svc.P99, 100*svc.Errors,
		1000*svc.CPU, svc.CPUCV, svc.Heap, svc.HeapCV, 100*cfg.ResetShare,
		cfg.Step, tm.Rollout, cfg.Step, tm.Lead, cfg.Test.Alpha, cfg.Test.K, K, cfg.Runs, cfg.RegressionRuns, len(cfg.Seeds), seedsText(cfg.Seeds), cfg.Step, cfg.Test.Alpha, cfg.Test.K)
	writeLimits(b, svc)
}

// writeLimits writes each judged SLI's boundaries as the count judge gets them.
func writeLimits(b *strings.Builder, svc Service) {
	slis, err := judged()
	if err != nil {
		fmt.Fprintf(b, "(no SLI table: %v)\n\n", err)
		return
	}
	b.WriteString("Boundaries of the count judge at stable's nominal level (normal tails; t3 has its own p95): latency SLIs as ratios of gray's quantile to stable's, given to LatencySteps (which turns them into exceedance bounds); the others as seqcount Bounds. The boundaries are the shipped count-based test's (parity.CountLimits): where the catalog's floor is as wide as its threshold, the margin is the floor plus 10% of stable's level for a ratio, twice the floor for a difference.\n\n| SLI | stable level | FAIL boundary (floor) | PASS margin |\n|---|---|---|---|\n")
	for _, s := range slis {
		level := s.nominal(svc, false)
		if s.q > 0 {
			f, m, err := s.latencyRatios(level)
			if err != nil {
				fmt.Fprintf(b, "| %s | %.4g s | (%v) | |\n", s.cat.ID, level, err)
				continue
			}
			fmt.Fprintf(b, "| %s | %.4g s | x%.4g | x%.4g |\n", s.cat.ID, level, f, m)
			continue
		}
		lim, err := s.limits(level)
		if err != nil {
			fmt.Fprintf(b, "| %s | %.4g | (%v) | |\n", s.cat.ID, level, err)
			continue
		}
		fmt.Fprintf(b, "| %s | %.4g | Rel %.4g, Abs %.4g | Rel %.4g, Abs %.4g |\n", s.cat.ID, level, lim.Floor.Rel, lim.Floor.Abs, lim.Margin.Rel, lim.Margin.Abs)
	}
	b.WriteString("\nThe per-minute judge's windows end on scrapes (exact differences, no extrapolation); neither judge has a traffic guard or a warm-up exclusion (no cold start is simulated).\n\n")
}

func boundsText() string {
	var s []string
	for _, b := range Bounds {
		s = append(s, fmt.Sprint(b))
	}
	return strings.Join(s, ", ")
}

func writeTables(b *strings.Builder, cfg Config) {
	b.WriteString("## Noise models\n\nSigmas are on the natural-log scale; an AR(1) process is stationary with the sd given and the minute-to-minute correlation phi (per scrape phi^(1/4)). Pod offsets are lasting (drawn once per run), independent for latency, CPU and heap.\n\n")
	b.WriteString("| model | track drift sd (latency) | track drift sd (CPU, heap) | phi | shared drift sd (phi) | pod offset sd | stalls (share, x) | CPU / heap noise per scrape | tails |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range cfg.Models {
		tails := "normal"
		if m.T3 {
			tails = "Student t, 3 df"
		}
		fmt.Fprintf(b, "| %s | %g | %g | %g | %g (%g) | %.3g | %g%% (%g, %gx) | %g / %g | %s |\n", m.Name, m.Drift, m.CostDrift, m.Phi,
			m.Common, m.CommonPhi, m.PodSD, 100*m.StallProb, m.StallShare, m.StallFactor, m.CPUNoise, m.HeapNoise, tails)
	}
	fmt.Fprintf(b, "\nar1: sd 0.19 x 0.5 = %.3g for latency and for each of CPU and heap cost (independent processes), phi 0.5 per minute. pod018 and pod05: 0.18 and 0.5 of %g, the per-minute sample sd of log p99 in the corpus. common: shared by both tracks' latency and costs.\n\n", PerMinuteSD*0.5, PerMinuteSD)
	b.WriteString("## Traffic\n\n| row | req/s | gray share | stable pods | gray pods |\n|---|---|---|---|---|\n")
	for _, t := range cfg.Traffics {
		fmt.Fprintf(b, "| %s | %g | %g%% | %d | %d |\n", t.Name, t.RPS, 100*t.GrayShare, t.StablePods, t.GrayPods)
	}
	b.WriteString("\n## Scenarios\n\nThe gray, from its start: every latency times x, CPU and heap per request times x, points added to its 5xx ratio.\n\n| scenario | latency | CPU | heap | errors | measures |\n|---|---|---|---|---|---|\n")
	for _, s := range cfg.Scenarios {
		fmt.Fprintf(b, "| %s | x%.4g | x%.4g | x%.4g | +%.2g | %s |\n", s.Name, s.Latency, s.CPU, s.Heap, s.Errors, kindText(s.Kind))
	}
	b.WriteString("\n")
}

func kindText(k ScenarioKind) string {
	switch k {
	case Boundary:
		return "false FAIL at the null's boundary"
	case Margin:
		return "false PASS"
	case Regression:
		return "time to FAIL"
	}
	return "false FAIL, time to PASS"
}

func writeResults(b *strings.Builder, cfg Config, cells []Cell) {
	b.WriteString("## Results\n\nFAIL and PASS rates per rollout with 95% Wilson intervals; times in minutes from the gray's start (median / 90th percentile), with the oracle's and the judge's multiple of it.\n\n")
	for _, m := range cfg.Models {
		fmt.Fprintf(b, "### %s\n\n| traffic | scenario | judge | looks | runs | FAIL | FAILed first on | FAIL within 10 min | time to FAIL | oracle FAIL (p .5 / .95) | PASS at some look | time to PASS | oracle PASS (p .5 / .9) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", m.Name)
		for _, c := range cells {
			if c.Model.Name != m.Name {
				continue
			}
			o := cfg.oracle(cells, c)
			sums := c.summaries()
			ids := sliNames()
			for j := range sums {
				for l, s := range sums[j] {
					fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %s | %s | %s | %s%s / %s | %s / %s | %s | %s%s / %s | %s / %s |\n",
						c.Traffic.Name, c.Scenario.Name, judgeName(j), lookName(l), s.Runs, rateText(s.Fail), failBy(s.FailBy, ids), rateText(s.Fail10),
						minText(s.FailMedian), multiple(s.FailMedian, o.Fail50), minText(s.FailP90), minText(o.Fail50), minText(o.Fail95),
						rateText(s.Pass), minText(s.PassMedian), multiple(s.PassMedian, o.Pass50), minText(s.PassP90), minText(o.Pass50), minText(o.Pass90))
				}
			}
		}
		b.WriteString("\n")
	}
}

// met prints whether a target is met.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// beyond notes an oracle that needs longer than a target allows.
func beyond(oracle, target float64) string {
	if oracle > target {
		return fmt.Sprintf("; the oracle itself needs %s min, beyond the target", minText(oracle))
	}
	return fmt.Sprintf("; oracle %s min", minText(oracle))
}

// find returns the cell of a model, traffic row and scenario key.
func find(cells []Cell, model, traffic, key string) (Cell, bool) {
	for _, c := range cells {
		if c.Model.Name == model && c.Traffic.Name == traffic && c.Scenario.Key == key {
			return c, true
		}
	}
	return Cell{}, false
}

// sliNames returns the judged SLIs' IDs, in Trace.FailSLI's order.
func sliNames() []string {
	var out []string
	if slis, err := judged(); err == nil {
		for _, s := range slis {
			out = append(out, string(s.cat.ID))
		}
	}
	return out
}

// failBy prints the FAILed runs per SLI that FAILed first, in SLI order.
func failBy(by map[int]int, ids []string) string {
	var parts []string
	for i, id := range ids {
		if by[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", id, by[i]))
		}
	}
	return strings.Join(parts, ", ")
}

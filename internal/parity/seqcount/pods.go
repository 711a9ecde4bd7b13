package seqcount

import (
	"math"
	"strconv"
)

// podTally pools each pod's counts over the usable steps, from Counts.Pods.
type podTally struct {
	kind         Kind
	stable, gray map[string]*podSums
}

// podSums is one pod's sums over the usable steps: its pooled counts and, for the sampling
// variance of its pooled rate about its track's step rates, the number of steps, its track's
// pooled counts over the same steps, and the sums of squares and cross-products of its per-step
// counts with its track's step rate rho_i (the track's Num/Requests in step i).
type podSums struct {
	num, req               float64
	windowReq              float64 // requests in the window's steps (history steps not counted)
	steps                  int
	trackNum, trackReq     float64
	numSq, numReqRho, rRho float64 // sum N_i^2, sum N_i R_i rho_i, sum (R_i rho_i)^2
}

func newPodTally(kind Kind) podTally {
	return podTally{kind: kind, stable: map[string]*podSums{}, gray: map[string]*podSums{}}
}

// add pools one usable step's per-pod counts; a pod entry with non-finite or negative counts is
// left out of the pod tally (the step's totals are what the test reads).
func (p podTally) add(st Step) {
	pool(p.stable, st.Stable, true)
	pool(p.gray, st.Gray, true)
}

// addHistory pools one usable step of stable's history (JudgeAfter): its pods' offsets are the
// same lasting ones, so their pooled rates over the history and the window carry less sampling
// noise, but a pod that served only in the history is no pod of the window (counts).
func (p podTally) addHistory(h Counts) {
	pool(p.stable, h, false)
}

// pool adds one step of a track's pods to m; total is the track's step (its Num and Requests are
// the step rate's; usable steps have both finite and Requests > 0); window tells a window's step
// from a history step.
func pool(m map[string]*podSums, total Counts, window bool) {
	rho := total.Num / total.Requests
	for i, c := range total.Pods {
		if !allFinite(c) || c.Num < 0 || c.Requests < 0 || max(c.Num, c.Requests) > maxCount {
			continue
		}
		name := c.Pod
		if name == "" {
			name = "#" + strconv.Itoa(i)
		}
		acc := m[name]
		if acc == nil {
			acc = &podSums{}
			m[name] = acc
		}
		acc.num += c.Num
		acc.req += c.Requests
		if window {
			acc.windowReq += c.Requests
		}
		acc.steps++
		acc.trackNum += total.Num
		acc.trackReq += total.Requests
		acc.numSq += c.Num * c.Num
		acc.numReqRho += c.Num * c.Requests * rho
		acc.rRho += c.Requests * rho * c.Requests * rho
	}
}

// logVar returns the sampling variance of the log of the pod's pooled rate r = num/req about its
// track, by the delta method, from its own step-to-step variation about its track's step rates:
// with q_i = rho_i/rbar (rbar the track's pooled rate over the pod's steps) the residuals
// e_i = N_i - r R_i q_i take out what the track's pods share in step i (a drift of the track, a
// load change), which is no sampling noise of one pod against another; since rho_i holds a share
// w = req/trackReq of the pod's own noise, they keep about (1-w) of it, so
//
//	v = n/(n-1) sum_i e_i^2 / (1-w) / num^2.
//
// It reports false with fewer than two steps, no amount, or a pod that is its whole track.
func (s *podSums) logVar() (float64, bool) {
	if s.steps < 2 || !(s.num > 0) || !(s.req > 0) || !(s.trackNum > 0) || !(s.trackReq > 0) {
		return 0, false
	}
	w := s.req / s.trackReq
	if !(w < 1-1e-9) {
		return 0, false
	}
	k := (s.num / s.req) / (s.trackNum / s.trackReq) // r/rbar
	ss := s.numSq - 2*k*s.numReqRho + k*k*s.rRho     // sum_i (N_i - k R_i rho_i)^2
	n := float64(s.steps)
	return math.Max(ss, 0) * n / (n - 1) / (1 - w) / (s.num * s.num), true
}

// counts returns the number of gray and stable pods that served requests in the window, at least
// 1 each (one pod is assumed for a track without per-pod counts).
func (p podTally) counts() (gray, stable int) {
	return max(served(p.gray), 1), max(served(p.stable), 1)
}

func served(m map[string]*podSums) int {
	n := 0
	for _, c := range m {
		if c.windowReq > 0 {
			n++
		}
	}
	return n
}

// spread estimates the sd of lasting per-pod offsets of the log rate from the pods within each
// track, by the method of moments of a one-way random-effects model: the within-track sums of
// squares of the pods' pooled log rates about their track's mean over their degrees of freedom
// df (pods less one, per track, summed), less what the pods' own sampling variances put into
// them. For PerRequest a pod's sampling variance is measured from its own step-to-step variation
// about its track's step rates (podSums.logVar; a pod with fewer than two usable steps is left
// out), and a track's pods j with variances v_j add (P-1)/P sum_j v_j to its sum of squares,
// which is taken off exactly. For Proportion it is about 1/events per pod, and the pods' mean of
// it over all pods, times noiseQuantile, is taken off. It returns the spread, df (the caller
// reads Student's t on them) and where the spread comes from; 0 and why without a track of two
// pods. Only the pods that served in the window count, their history steps pooled in: a pod that
// served only in stable's history may have run the other build before a promotion, and its level
// is no lasting offset of a pod (TestPodSpreadLeavesOutHistoryOnlyPods).
func (p podTally) spread() (sd float64, df int, why string) {
	var ss, vn, allV float64
	var npods int
	for _, track := range []map[string]*podSums{p.stable, p.gray} {
		var logs, vars []float64
		for _, c := range track {
			if c.req <= 0 || c.windowReq <= 0 {
				// A pod that served only in stable's history is no pod of the comparison:
				// before a promotion it ran the other build, whose level is no lasting
				// offset of a pod.
				continue
			}
			switch {
			case p.kind == Proportion:
				logs = append(logs, math.Log(smoothRate(c.num, c.req)))
				vars = append(vars, 1/(c.num+0.5))
			default:
				v, ok := c.logVar()
				if !ok {
					continue
				}
				logs = append(logs, math.Log(c.num/c.req))
				vars = append(vars, v)
			}
		}
		for _, v := range vars {
			allV += v
		}
		npods += len(vars)
		if len(logs) < 2 {
			continue
		}
		k := float64(len(logs))
		var mean, sv float64
		for i, l := range logs {
			mean += l / k
			sv += vars[i]
		}
		for _, l := range logs {
			ss += (l - mean) * (l - mean)
		}
		vn += (k - 1) / k * sv
		df += len(logs) - 1
	}
	if df < 1 {
		if len(p.stable) == 0 {
			return 0, 0, "not allowed for (no per-pod counts)"
		}
		return 0, 0, "not allowed for (no track with two pods with a rate)"
	}
	q := noiseQuantile(float64(df))
	v := (ss - q*vn) / float64(df)
	if p.kind == Proportion {
		v = ss/float64(df) - q*allV/float64(npods)
	}
	if v <= 0 {
		return 0, df, "estimated 0 from the pods within each track"
	}
	return math.Sqrt(v), df, "estimated from the pods within each track"
}

// noiseQuantile returns q/df, q the 95% quantile of chi-squared with df degrees of freedom (at
// least 1), by Wilson and Hilferty: q/df = (1 - h + z sqrt(h))^3 with h = 2/(9 df) and z the
// standard normal's 95% quantile. The pods' sum of squares over df exceeds their mean sampling
// variance by this factor in 5% of draws when there are no offsets. A Proportion spread is what the
// pods show beyond it: the pods' sampling variance, about 1/events, comes from the few events of
// each pod and is itself the bulk of their scatter, so the plain moment estimate (factor 1) allowed
// a spread in about two draws in five with no offsets at all (3 degrees of freedom: 4 stable pods),
// which widened the floor for a FAIL and narrowed the margin for a PASS. With lasting offsets the
// sampling variance falls as the events add up, and the spread comes through.
func noiseQuantile(df float64) float64 {
	if !(df >= 1) {
		df = 1
	}
	const z95 = 1.6448536269514722
	h := 2 / (9 * df)
	return math.Pow(1-h+z95*math.Sqrt(h), 3)
}

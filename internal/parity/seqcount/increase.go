package seqcount

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Increase returns, for each step (edges[i-1], edges[i]] (len(edges)-1 steps), the increase of the
// counters summed over pods: consecutive samples of a pod are differenced; a drop is a counter
// reset (the increase is the new value); an increment is attributed to the step holding the later
// sample; a pod that appears or vanishes mid-step contributes only what its own samples show
// (nothing before its first sample or after its last); NaN, Inf or negative samples are left out.
// A pod's samples out of time order are sorted first. notes names every cause of anything left
// out or changed, one line per cause with its count. stepsOK[i] is false for a step with no
// sample at all (no data, not zero). Edges that are fewer than two or not strictly ascending give
// no steps and a note.
func Increase(series []Series, edges []time.Time) (inc []float64, stepsOK []bool, notes []string) {
	if len(edges) < 2 {
		return nil, nil, []string{fmt.Sprintf("no steps: %d edges, need at least 2", len(edges))}
	}
	for i := 1; i < len(edges); i++ {
		if !edges[i].After(edges[i-1]) {
			return nil, nil, []string{fmt.Sprintf("no steps: edge %d (%s) is not after edge %d", i, edges[i].Format(time.RFC3339), i-1)}
		}
	}
	n := len(edges) - 1
	inc, stepsOK = make([]float64, n), make([]bool, n)
	var tally causeTally
	for _, s := range series {
		addSeries(s, edges, inc, stepsOK, &tally)
	}
	return inc, stepsOK, tally.lines()
}

// stepOf returns the index of the step (edges[i-1], edges[i]] holding t, or -1.
func stepOf(edges []time.Time, t time.Time) int {
	i := sort.Search(len(edges), func(k int) bool { return !edges[k].Before(t) })
	if i == 0 || i == len(edges) {
		return -1
	}
	return i - 1
}

// addSeries adds one pod's increments to inc.
func addSeries(s Series, edges []time.Time, inc []float64, ok []bool, tally *causeTally) {
	clean := make([]Sample, 0, len(s.Samples))
	for _, x := range s.Samples {
		switch {
		case math.IsNaN(x.V) || math.IsInf(x.V, 0):
			tally.add("NaN or Inf samples left out", s.Pod)
		case x.V < 0:
			tally.add("negative samples left out", s.Pod)
		default:
			clean = append(clean, x)
		}
	}
	if !sort.SliceIsSorted(clean, func(a, b int) bool { return clean[a].T.Before(clean[b].T) }) {
		tally.add("series with samples out of time order, sorted", s.Pod)
		sort.SliceStable(clean, func(a, b int) bool { return clean[a].T.Before(clean[b].T) })
	}
	for k, x := range clean {
		i := stepOf(edges, x.T)
		if i < 0 {
			continue
		}
		ok[i] = true
		if k == 0 {
			continue
		}
		d := x.V - clean[k-1].V
		if d < 0 {
			tally.add("counter resets (the increase taken as the new value)", s.Pod)
			d = x.V
		}
		inc[i] += d
	}
}

// causeTally counts the causes of notes and the pods they touched.
type causeTally struct {
	order []string
	count map[string]int
	pods  map[string]map[string]bool
}

func (c *causeTally) add(cause, pod string) {
	if c.count == nil {
		c.count, c.pods = map[string]int{}, map[string]map[string]bool{}
	}
	if c.count[cause] == 0 {
		c.order = append(c.order, cause)
		c.pods[cause] = map[string]bool{}
	}
	c.count[cause]++
	c.pods[cause][pod] = true
}

// lines returns one line per cause: "<count> <cause> (pods a, b)".
func (c *causeTally) lines() []string {
	var out []string
	for _, cause := range c.order {
		pods := make([]string, 0, len(c.pods[cause]))
		for p := range c.pods[cause] {
			pods = append(pods, fmt.Sprintf("%q", p))
		}
		sort.Strings(pods)
		out = append(out, fmt.Sprintf("%d %s (pods %s)", c.count[cause], cause, strings.Join(pods, ", ")))
	}
	return out
}

package parity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// This file checks the count rules' raw series before the count-based test
// reads them (DESIGN.md section 6: garbage is never evidence). A counter that
// Prometheus scraped from a healthy service obeys invariants that no regression
// can break: it has one sample per timestamp, it only falls when its process
// restarts (and then to near zero, with every other counter of that pod), a
// part never exceeds its whole (5xx within requests, a bucket within the next
// one up, the +Inf bucket equal to the requests), and two pods never report the
// very same history. Series that break one are not a slower or a faster gray:
// they are a broken exporter, a relabelling that merged or duplicated targets,
// a federation or remote-write bug. The test gives them NO DATA naming the
// defect, never a PASS or a FAIL, so a canary holds instead of promoting or
// rolling back on them.

// resetFloor is how far a counter must fall for the fall to be a restart of its
// process: to at most this share of its value before. A smaller dip (a counter
// read 3% low, a sample from another target) is garbage, not a reset.
const resetFloor = 0.5

// countSlack is the disagreement allowed between two counters that a scrape
// reads at slightly different instants (a histogram's +Inf bucket against the
// request counter): this many counts, or countSlackRel of the whole, whichever
// is larger.
const (
	countSlack    = 5
	countSlackRel = 0.01
)

// countSet is one track's raw series of one SLI: the requests rule's and the
// numerator's (for a latency SLI the buckets, by le). part says the numerator
// counts a subset of the requests (5xx, or requests within a bucket), so it
// never exceeds them.
type countSet struct {
	track     string
	reqs, num []promread.RawSeries
	part      bool
	buckets   bool
}

// countDefects returns the defects found in sets in one line ("" when none):
// each kind of defect with its count and its first instance.
func countDefects(sets ...countSet) string {
	var d defectTally
	for _, s := range sets {
		for _, rs := range append(slices.Clone(s.reqs), s.num...) {
			seriesDefects(&d, s.track, rs)
		}
		duplicatePods(&d, s.track, s.reqs)
		resetDefects(&d, s)
		if s.part && !s.buckets {
			partDefects(&d, s.track, "5xx", s.num, s.reqs)
		}
		if s.buckets {
			bucketDefects(&d, s)
		}
	}
	return d.String()
}

// defectTally counts defects by kind, keeping each kind's first instance.
type defectTally struct {
	order []string
	count map[string]int
	first map[string]string
}

func (d *defectTally) add(kind, format string, args ...any) {
	if d.count == nil {
		d.count, d.first = map[string]int{}, map[string]string{}
	}
	if d.count[kind] == 0 {
		d.order = append(d.order, kind)
		d.first[kind] = fmt.Sprintf(format, args...)
	}
	d.count[kind]++
}

// String returns the defects, most common kind first, in one line.
func (d *defectTally) String() string {
	if len(d.order) == 0 {
		return ""
	}
	kinds := slices.Clone(d.order)
	slices.SortStableFunc(kinds, func(a, b string) int { return d.count[b] - d.count[a] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s (the first %s)", d.count[k], k, d.first[k])
	}
	return "garbage in the count rules' series: " + strings.Join(parts, "; ")
}

func clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) }

func seriesName(track string, rs promread.RawSeries) string {
	if rs.Le != "" {
		return fmt.Sprintf("%s {%s, le=%q}", track, rs.ID, rs.Le)
	}
	return fmt.Sprintf("%s {%s}", track, rs.ID)
}

// seriesDefects checks one series alone: finite, non-negative samples, one per
// timestamp.
func seriesDefects(d *defectTally, track string, rs promread.RawSeries) {
	seen := make(map[time.Time]bool, len(rs.Points))
	for _, p := range rs.Points {
		if !finite(p.V) || p.V < 0 {
			d.add("NaN, infinite or negative samples", "%v at %s in %s", p.V, clock(p.T), seriesName(track, rs))
		}
		if seen[p.T] {
			d.add("samples repeated at one timestamp", "%s in %s", clock(p.T), seriesName(track, rs))
		}
		seen[p.T] = true
	}
}

// duplicatePods flags two pods of a track whose request counters hold the
// same samples: one target scraped under two names, or a series copied.
func duplicatePods(d *defectTally, track string, reqs []promread.RawSeries) {
	byKey := map[string]string{}
	for _, rs := range reqs {
		if len(rs.Points) < 3 || !(rs.Points[len(rs.Points)-1].V > rs.Points[0].V) {
			continue // too short or too flat to tell a copy from a coincidence
		}
		var b strings.Builder
		for _, p := range rs.Points {
			fmt.Fprintf(&b, "%d:%v,", p.T.UnixMilli(), p.V)
		}
		k := rs.Le + "\x00" + b.String()
		if other, ok := byKey[k]; ok && other != rs.ID {
			d.add("series identical under two pods", "%s {%s} and {%s}", track, other, rs.ID)
			continue
		}
		byKey[k] = rs.ID
	}
}

// sorted returns rs's points in time order, finite ones only.
func sorted(rs promread.RawSeries) []promread.Point {
	out := make([]promread.Point, 0, len(rs.Points))
	for _, p := range rs.Points {
		if finite(p.V) && p.V >= 0 {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b promread.Point) int { return a.T.Compare(b.T) })
	return out
}

// resetDefects checks every fall of a counter: a pod's request counter may fall
// only to near zero (resetFloor), and its other counters only where its
// requests reset; where they reset, a counter that goes on rising did not
// restart with them.
func resetDefects(d *defectTally, s countSet) {
	resets := map[string][]time.Time{} // per pod: the sample times at which its requests reset
	for _, rs := range s.reqs {
		ps := sorted(rs)
		for k := 1; k < len(ps); k++ {
			prev, cur := ps[k-1].V, ps[k].V
			if cur >= prev {
				continue
			}
			if cur > resetFloor*prev {
				d.add("counters falling without a restart (a dip read as a reset)", "%s fell from %g to %g at %s", seriesName(s.track, rs), prev, cur, clock(ps[k].T))
				continue
			}
			resets[rs.ID] = append(resets[rs.ID], ps[k].T)
		}
	}
	for _, rs := range s.num {
		ps := sorted(rs)
		for k := 1; k < len(ps); k++ {
			prev, cur, from, to := ps[k-1].V, ps[k].V, ps[k-1].T, ps[k].T
			reset := slices.ContainsFunc(resets[rs.ID], func(t time.Time) bool { return t.After(from) && !t.After(to) })
			switch {
			case cur < prev && !reset:
				d.add("counters falling while the pod's requests go on", "%s fell from %g to %g at %s", seriesName(s.track, rs), prev, cur, clock(to))
			case reset && prev > 0 && cur >= prev && (!s.buckets || rs.Le == "+Inf"):
				// A restarted process starts every counter from zero: one that
				// did not fall went on counting in a process that did not
				// restart. (A sparse bucket's few counts may be matched again
				// within a step, so only the +Inf bucket is held to it.)
				d.add("request counters resetting alone", "the requests of %s {%s} reset by %s while %s went from %g to %g", s.track, rs.ID, clock(to), seriesName(s.track, rs), prev, cur)
			}
		}
	}
}

// partDefects checks, per pod and timestamp, that the part (5xx) does not
// exceed the whole (requests) beyond what a scrape's skew explains.
func partDefects(d *defectTally, track, what string, part, whole []promread.RawSeries) {
	wholes := byPodTime(whole)
	for _, rs := range part {
		for _, p := range rs.Points {
			w, ok := wholes[rs.ID][p.T]
			if ok && finite(w) && finite(p.V) && p.V > w+slack(w) {
				d.add(what+" counters above the requests", "%s: %g of %g requests at %s", seriesName(track, rs), p.V, w, clock(p.T))
			}
		}
	}
}

func slack(whole float64) float64 { return math.Max(countSlack, countSlackRel*whole) }

// byPodTime indexes series by ID and sample time.
func byPodTime(series []promread.RawSeries) map[string]map[time.Time]float64 {
	out := map[string]map[time.Time]float64{}
	for _, rs := range series {
		m := out[rs.ID]
		if m == nil {
			m = map[time.Time]float64{}
			out[rs.ID] = m
		}
		for _, p := range rs.Points {
			m[p.T] = p.V
		}
	}
	return out
}

// bucketDefects checks, per pod and timestamp, that the buckets do not fall as
// le rises and that the +Inf bucket counts the requests.
func bucketDefects(d *defectTally, s countSet) {
	type bucket struct {
		le  float64
		raw string
		v   map[time.Time]float64
	}
	pods := map[string][]bucket{}
	for _, rs := range s.num {
		le, err := parseLe(rs.Le)
		if err != nil {
			d.add("buckets without a bound", "%s", seriesName(s.track, rs))
			continue
		}
		v := map[time.Time]float64{}
		for _, p := range rs.Points {
			v[p.T] = p.V
		}
		pods[rs.ID] = append(pods[rs.ID], bucket{le: le, raw: rs.Le, v: v})
	}
	reqs := byPodTime(s.reqs)
	for _, pod := range sortedKeys(pods) {
		bs := pods[pod]
		slices.SortStableFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
		for i := 1; i < len(bs); i++ {
			lo, hi := bs[i-1], bs[i]
			for _, t := range sortedTimes(hi.v) {
				if l, ok := lo.v[t]; ok && finite(l) && finite(hi.v[t]) && l > hi.v[t] {
					d.add("buckets falling as le rises", "%s {%s}: le=%q holds %g, le=%q %g at %s", s.track, pod, lo.raw, l, hi.raw, hi.v[t], clock(t))
				}
			}
		}
		inf := bs[len(bs)-1]
		if !math.IsInf(inf.le, 1) {
			continue // histogram() names a missing +Inf bucket
		}
		for _, t := range sortedTimes(inf.v) {
			r, ok := reqs[pod][t]
			if ok && finite(r) && finite(inf.v[t]) && math.Abs(inf.v[t]-r) > slack(r) {
				d.add("+Inf buckets not counting the requests", "%s {%s}: +Inf %g, requests %g at %s", s.track, pod, inf.v[t], r, clock(t))
			}
		}
	}
}

// parseLe parses a bucket's le label by value, so that "1", "1.0" and "1e0"
// are one bound (Prometheus 3 writes le="1.0" where client_golang wrote "1").
func parseLe(le string) (float64, error) {
	b, err := strconv.ParseFloat(le, 64)
	if err != nil || math.IsNaN(b) || math.IsInf(b, -1) {
		return 0, fmt.Errorf("bucket le=%q is not a bound", le)
	}
	return b, nil
}

func sortedTimes(m map[time.Time]float64) []time.Time {
	out := make([]time.Time, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

package countsim

import (
	"math"
	"time"

	"github.com/poolparity/poolparity/internal/parity"
)

// trackSums holds a track's counters summed over its pods as prefix sums over scrapes: sums[s][i]
// is the increase of series s from the first scrape to scrape i, a restart's drop counted as an
// increase from zero (as Prometheus' increase does).
type trackSums [NumSeries][]float64

func sumTrack(pods []PodCounters, n int) trackSums {
	var t trackSums
	for s := range t {
		t[s] = make([]float64, n)
	}
	for _, p := range pods {
		for s := range p.Values {
			v := p.Values[s]
			for k := 1; k < len(v); k++ {
				d := v[k] - v[k-1]
				if d < 0 {
					d = v[k]
				}
				t[s][p.First+k] += d
			}
		}
	}
	for s := range t {
		for i := 1; i < n; i++ {
			t[s][i] += t[s][i-1]
		}
	}
	return t
}

// requests returns the track's requests over scrapes (a, b].
func (t trackSums) requests(a, b int) float64 { return t[SeriesCount][b] - t[SeriesCount][a] }

// value returns the track's value of the SLI over scrapes (a, b]: the histogram_quantile of the
// bucket increases, or the numerator's increase per request; NaN without requests.
func (t trackSums) value(s sli, a, b int) float64 {
	reqs := t.requests(a, b)
	if !(reqs > 0) {
		return math.NaN()
	}
	if s.q == 0 {
		return (t[s.series][b] - t[s.series][a]) / reqs
	}
	rank := s.q * reqs
	lower, below := 0.0, 0.0
	for j, le := range Bounds {
		c := t[j][b] - t[j][a]
		if c >= rank {
			if c == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(c-below)
		}
		lower, below = le, c
	}
	return Bounds[len(Bounds)-1] // in the +Inf bucket: the highest finite bound
}

// minuteLooks returns the look function of today's per-minute sequential judge: at look j (j
// steps after the gray's start) each SLI's per-minute values of both tracks over the minutes ending
// at the last scrape before the look, then a minute before that, back to the gray's start, judged by
// parity.SequentialTest with the catalog's criterion and k = K.
func minuteLooks(su Setup, run Run, slis []sli, step time.Duration) lookFunc {
	n, grayFirst := su.Timing.scrapes()
	st, gr := sumTrack(run.Stable, n), sumTrack(run.Gray, n)
	per := int(time.Minute / su.Timing.Scrape)
	crits := make([]parity.Criterion, len(slis))
	for i, s := range slis {
		crits[i] = parity.CriterionOf(s.cat)
	}
	var test parity.SequentialTest
	return func(j int) (fail int, pass bool) {
		end := min(n-1, int((su.Timing.Lead+time.Duration(j)*step)/su.Timing.Scrape))
		var starts []int
		for a := end - per; a >= grayFirst; a -= per {
			starts = append(starts, a)
		}
		pass = true
		for i, s := range slis {
			pairs := make([]parity.Pair, 0, len(starts))
			for k := len(starts) - 1; k >= 0; k-- {
				a := starts[k]
				// Each minute's requests go with its values, as the controller reads them (catalog
				// CountRule): a proportion's test needs them to bound its rate.
				pairs = append(pairs, parity.Pair{T: su.Timing.At(a + per), Stable: st.value(s, a, a+per), Gray: gr.value(s, a, a+per),
					NStable: st.requests(a, a+per), NGray: gr.requests(a, a+per)})
			}
			switch test.Judge(crits[i], pairs, K).Verdict {
			case parity.Fail:
				return i, false
			case parity.Pass:
			default:
				pass = false
			}
		}
		return -1, pass
	}
}

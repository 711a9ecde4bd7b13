package parity

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// This file is the judge saying what it cannot see (Options.Inputs): the
// raw series that a judged row or an alert reads and a track does not
// export, the latency a histogram's first bucket hides, and each track's
// pool_mode and instance count. What the rules read is taken from the rules
// Prometheus has loaded (the chart's template rendered for the service's own
// metric names: rules.http.metrics, rules.runtime.metrics, custom names), so
// that it is one source with what records the rows; one query answers which
// of those series each track has.

// TrackInfo is what a compared track's series say about it.
type TrackInfo struct {
	// Track is "stable" (the baseline) or "gray"; GrayStatus its label value.
	Track      string `json:"track"`
	GrayStatus string `json:"gray_status"`
	// PoolModes are the pool_mode values its series carry, sorted; none
	// when no series carries the label.
	PoolModes []string `json:"pool_modes,omitempty"`
	// Instances is how many scrape targets (instance label values) its
	// series come from.
	Instances int `json:"instances"`
}

// reader is a judged row or an alert, and the raw series it reads.
type reader struct {
	name string
	// grayOnly: only the gray track's series count (a GrayAtLeast SLI and
	// its alert: an unpooled stable has no sync.Pool series by design).
	grayOnly bool
	raw      []string
	// row is the SLI of a judged row, nil for an alert; vals its stable
	// and gray values.
	row  *catalog.SLI
	vals [2]*float64
}

// alwaysAsked are series asked beside the rules' inputs for the tracks'
// instances and pool modes: every target's up, and OpenTelemetry's
// target_info, which carries resource attributes such as a pool_mode.
// poolGets tells a pooled track (as trackPooled does): a track without it
// is unpooled, and its missing sync.Pool series (poolPrefix) are by design.
var alwaysAsked = []string{"up", "target_info", poolGets}

const (
	poolGets   = "syncpool_gets_total"
	poolPrefix = "syncpool_"
	// redisPrefix starts the go-redis pool series (redisprometheus).
	redisPrefix = "redis_pool_"
)

// seeInputs fills r.Tracks and r.BlindSpots, and notes an unexpected or
// mixed pool_mode. It is a diagnosis: a query that fails is said in a
// blind spot, never an error of the evaluation.
func (e evaluation) seeInputs(ctx context.Context, q Querier, r *Report) {
	reads, err := promread.ReadRuleReads(ctx, q)
	if err != nil {
		r.BlindSpots = append(r.BlindSpots, "could not list the series the rules read: "+err.Error())
		return
	}
	readers := e.readers(reads, r.Rows)
	names := slices.Clone(alwaysAsked)
	for _, rd := range readers {
		for _, n := range rd.raw {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	base := e.opts.BaselineTrack
	tracks := `gray_status=~"` + instrument.GrayStatusGray + "|" + base + `"`
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	expr := fmt.Sprintf(`count by (__name__, gray_status, pool_mode, instance) ({__name__=~%s,%s})`,
		strconv.Quote(strings.Join(quoted, "|")), join(e.opts.Selector, tracks))
	vec, err := promread.Vector(ctx, q, expr, e.opts.At)
	if err != nil {
		r.BlindSpots = append(r.BlindSpots, "could not check which series each track exports: "+err.Error())
		return
	}
	has := map[string]map[string]bool{} // name -> gray_status -> present
	modes := map[string]map[string]bool{}
	instances := map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		if v != "" {
			m[k][v] = true
		}
	}
	for _, s := range vec {
		gs := string(s.Metric["gray_status"])
		add(has, string(s.Metric[model.MetricNameLabel]), gs)
		add(modes, gs, string(s.Metric["pool_mode"]))
		add(instances, gs, string(s.Metric["instance"]))
	}
	for _, gs := range []string{base, instrument.GrayStatusGray} {
		ti := TrackInfo{Track: promread.TrackName(gs), GrayStatus: gs, PoolModes: slices.Sorted(maps.Keys(modes[gs])), Instances: len(instances[gs])}
		r.Tracks = append(r.Tracks, ti)
		if note := e.poolModeNote(ti); note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	r.BlindSpots = append(r.BlindSpots, missingSeries(readers, has, base)...)
	r.BlindSpots = append(r.BlindSpots, e.firstBuckets(ctx, q, readers, tracks)...)
}

// readers returns the judged rows and the loaded alerts of the catalog
// with the raw series each reads through the loaded rules. The alert of an
// SLI left out as unpooled (its gray has no sync.Pool series) is left out
// too: it is blind by design, and a note already says so.
func (e evaluation) readers(reads promread.RuleReads, rows []Row) []reader {
	var out []reader
	judged := map[catalog.ID]bool{}
	for _, row := range rows {
		s, ok := e.cat.Get(row.ID)
		if !ok {
			continue
		}
		judged[s.ID] = true
		roots := s.Rules(e.opts.Window)
		if ov := e.opts.Overrides[s.ID].Rule; ov != "" {
			roots = []string{ov}
		}
		if _, loaded := reads.Records[roots[0]]; !loaded {
			continue // a rule of the user's own, not loaded as a recording rule: nothing to trace
		}
		out = append(out, reader{name: fmt.Sprintf("the %q row", s.Name), grayOnly: s.Comparison == GrayAtLeast, raw: reads.Raw(roots...), row: &s, vals: [2]*float64{row.Stable, row.Gray}})
	}
	for _, name := range e.cat.Alerts() {
		if _, loaded := reads.Alerts[name]; !loaded {
			continue
		}
		grayOnly := false
		if i := slices.IndexFunc(e.cat.SLIs, func(s catalog.SLI) bool { return s.Alert != nil && s.Alert.Name == name }); i >= 0 {
			s := e.cat.SLIs[i]
			if s.Judged == catalog.WhenGrayPooled && !judged[s.ID] {
				continue
			}
			grayOnly = s.Comparison == GrayAtLeast
		}
		out = append(out, reader{name: "alert " + name, grayOnly: grayOnly, raw: reads.Raw(name)})
	}
	return out
}

// missingSeries returns one blind spot per raw series that a reader reads
// and a track it compares does not export, naming the readers.
func missingSeries(readers []reader, has map[string]map[string]bool, base string) []string {
	// A service without Redis exports none of the go-redis pool series: they are absent by
	// design there (the Redis row's note says it is not judged), not a blind spot.
	redis := false
	for n, tracks := range has {
		if strings.HasPrefix(n, redisPrefix) && len(tracks) > 0 {
			redis = true
		}
	}
	// expected says whether track gs should export series n: a sync.Pool series only on a
	// pooled track, a Redis pool series only in a service that exports some.
	expected := func(n, gs string) bool {
		switch {
		case strings.HasPrefix(n, poolPrefix):
			return has[poolGets][gs]
		case strings.HasPrefix(n, redisPrefix):
			return redis
		}
		return true
	}
	type miss struct {
		stable, gray bool
		who          []string
	}
	misses := map[string]*miss{}
	for _, rd := range readers {
		for _, n := range rd.raw {
			gray := instrument.GrayStatusGray
			m := miss{gray: expected(n, gray) && !has[n][gray], stable: !rd.grayOnly && expected(n, base) && !has[n][base]}
			if !m.gray && !m.stable {
				continue
			}
			if misses[n] == nil {
				misses[n] = &miss{}
			}
			misses[n].gray = misses[n].gray || m.gray
			misses[n].stable = misses[n].stable || m.stable
			misses[n].who = append(misses[n].who, rd.name)
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(misses)) {
		m := misses[n]
		who := listed(m.who) + " reads"
		if len(m.who) > 1 {
			who = listed(m.who) + " read"
		}
		switch {
		case m.gray && m.stable:
			out = append(out, fmt.Sprintf("neither track exports %s, which %s: blind to what it measures (is it exported under another name? rules.http.metrics and rules.runtime.metrics pick the names)", n, who))
		case m.gray:
			out = append(out, fmt.Sprintf("the gray track does not export %s, which %s: blind to the gray's", n, who))
		default:
			out = append(out, fmt.Sprintf("the stable track does not export %s, which %s: nothing to compare the gray's with", n, who))
		}
	}
	return out
}

// firstBuckets returns a warning per latency row whose quantile sits in
// its histogram's first bucket, or whose floor is not above the first
// bucket's upper bound: a regression inside that bucket moves no bucket
// count, and histogram_quantile only interpolates within it. The bounds are
// the le values Prometheus holds for the tracks.
func (e evaluation) firstBuckets(ctx context.Context, q Querier, readers []reader, tracks string) []string {
	var out []string
	bounds := map[string]float64{} // bucket series -> first finite bound
	for _, rd := range readers {
		if rd.row == nil || rd.row.Unit != catalog.Seconds {
			continue
		}
		for _, n := range rd.raw {
			if !strings.HasSuffix(n, "_bucket") {
				continue
			}
			b, ok := bounds[n]
			if !ok {
				var err error
				if b, err = e.firstBound(ctx, q, n, tracks); err != nil {
					out = append(out, fmt.Sprintf("could not read the buckets of %s: %v", n, err))
				}
				bounds[n] = b
			}
			if b > 0 {
				out = append(out, firstBucketWarnings(*rd.row, rd.vals, n, b)...)
			}
		}
	}
	return out
}

// firstBucketWarnings are the warnings of one latency row against the
// first bucket bound b of the histogram bucket series n.
func firstBucketWarnings(s catalog.SLI, vals [2]*float64, n string, b float64) []string {
	var out []string
	bound := FormatValue(catalog.Seconds, b)
	var in []string
	for i, name := range []string{"stable", "gray"} {
		if v := vals[i]; v != nil && *v <= b {
			in = append(in, fmt.Sprintf("%s %s", name, FormatValue(catalog.Seconds, *v)))
		}
	}
	if len(in) > 0 {
		out = append(out, fmt.Sprintf("%s sits in the first bucket of %s (le=%s: %s): a regression under %s is invisible, histogram_quantile only interpolates inside it (finer buckets under %s would show it)",
			s.Name, n, strconv.FormatFloat(b, 'g', -1, 64), strings.Join(in, ", "), bound, bound))
	}
	if s.Floor > 0 && s.Floor <= b {
		out = append(out, fmt.Sprintf("the %s floor %s is not above the first bucket bound of %s (le=%s): a regression under %s is invisible to the histogram, whatever the floor allows",
			s.Name, FormatValue(catalog.Seconds, s.Floor), n, strconv.FormatFloat(b, 'g', -1, 64), bound))
	}
	return out
}

// firstBound returns the smallest finite positive le of the histogram
// bucket series n on the compared tracks, 0 when it has none.
func (e evaluation) firstBound(ctx context.Context, q Querier, n, tracks string) (float64, error) {
	vec, err := promread.Vector(ctx, q, "count by (le) ("+sel("__name__="+strconv.Quote(n), e.opts.Selector, tracks)+")", e.opts.At)
	if err != nil {
		return 0, err
	}
	first := math.Inf(1)
	for _, s := range vec {
		le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
		if err == nil && le > 0 && le < first {
			first = le
		}
	}
	if math.IsInf(first, 1) {
		return 0, nil
	}
	return first, nil
}

// poolModeNote says what is wrong with a track's pool_mode ("" when
// nothing): more than one value (two builds answer as one track: a stale
// process left on its port), or not the one expected
// (Options.StablePoolMode, GrayPoolMode).
func (e evaluation) poolModeNote(ti TrackInfo) string {
	want := e.opts.StablePoolMode
	if ti.Track == "gray" {
		want = e.opts.GrayPoolMode
	}
	modes := strings.Join(ti.PoolModes, " and ")
	switch {
	case len(ti.PoolModes) > 1:
		return fmt.Sprintf("the %s track carries pool_mode %s (%s): more than one build answers as this track (a stale process left on its port?), and its rows mix them",
			ti.Track, modes, plural(ti.Instances, "instance"))
	case want == "":
	case len(ti.PoolModes) == 0:
		return fmt.Sprintf("no series of the %s track carries pool_mode, expected %s", ti.Track, want)
	case ti.PoolModes[0] != want:
		return fmt.Sprintf("the %s track carries pool_mode %s, expected %s: is this the other build?", ti.Track, modes, want)
	}
	return ""
}

// TrackLine states the tracks' pool modes and instances on one line, e.g.
// "stable pool_mode unpooled, 1 instance; gray pool_mode pooled, 2 instances".
func TrackLine(tracks []TrackInfo) string {
	parts := make([]string, len(tracks))
	for i, t := range tracks {
		mode := "no pool_mode"
		if len(t.PoolModes) > 0 {
			mode = "pool_mode " + strings.Join(t.PoolModes, "+")
		}
		parts[i] = fmt.Sprintf("%s %s, %s", t.Track, mode, plural(t.Instances, "instance"))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// listed joins names as English: "a", "a and b", "a, b and c".
func listed(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

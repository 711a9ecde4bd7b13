package main

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/recorded"
)

// corpus is the recorded corpus: recordings of real runs (the demo, the kind cluster), grouped
// by what ran and where (a group's recordings share a step). A run of it is built by a block bootstrap: the rollout's time is filled with
// one-minute blocks of the recorded per-step increments, each drawn from a random recording of
// the group at a random offset, both tracks from the same block, so that the real noise of
// both tracks within a minute (and what they share: the machine, Redis) is kept, at any run
// length, from a few minutes of recording.
type corpus struct {
	groups map[string][]recorded.Recording // by scenario ("aa", "regression-40ms", ...)
}

// loadCorpus reads every *.json.gz under dir. A recording's group is its file name up to the
// run's number: demo-regression-40ms-1.json.gz is in group demo-regression-40ms.
func loadCorpus(dir string) (corpus, error) {
	c := corpus{groups: map[string][]recorded.Recording{}}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	if err != nil {
		return c, err
	}
	if len(paths) == 0 {
		return c, fmt.Errorf("no recordings (*.json.gz) in %s", dir)
	}
	for _, p := range paths {
		r, err := recorded.ReadFile(p)
		if err != nil {
			return c, err
		}
		if r.Len() < 60/int(max(r.Step/time.Second, 1))+1 {
			return c, fmt.Errorf("%s: %d steps of %s, less than a minute", p, r.Len(), r.Step)
		}
		c.groups[group(p)] = append(c.groups[group(p)], r)
	}
	return c, nil
}

func group(path string) string {
	g := strings.TrimSuffix(filepath.Base(path), ".json.gz")
	if i := strings.LastIndexByte(g, '-'); i > 0 {
		g = g[:i]
	}
	return g
}

// scenarios returns a scenario per group (its recordings share a step), the A/A groups
// first.
func (c corpus) scenarios() []scenario {
	var aa, other []scenario
	for _, g := range slices.Sorted(maps.Keys(c.groups)) {
		sc := scenario{Name: g + " (recorded)", Recording: g}
		if isAA(g) {
			aa = append(aa, sc)
		} else {
			other = append(other, sc)
		}
	}
	return append(aa, other...)
}

func isAA(g string) bool { return strings.Contains(g, "-aa") || strings.HasPrefix(g, "aa") }

func (c corpus) info() []recordingInfo {
	var out []recordingInfo
	for _, g := range slices.Sorted(maps.Keys(c.groups)) {
		for _, r := range c.groups[g] {
			out = append(out, recordingInfo{Name: r.Name, Scenario: r.Scenario, Command: r.Command, Steps: r.Len(), Step: r.Step, Series: len(r.Series)})
		}
	}
	return out
}

// recordings returns the group of sc.
func (c corpus) recordings(sc scenario) []recorded.Recording { return c.groups[sc.Recording] }

// bootSource replays bootstrapped blocks of recordings: the stable track from the start, the
// gray from Lead on (its counters from zero then).
type bootSource struct {
	cfg   config
	step  time.Duration // the scrape interval: a whole number of the recordings' steps
	k     int           // recorded steps per scrape
	recs  []recorded.Recording
	incs  [][][]float64 // per recording, per series, per step
	names [][]string    // per recording, per series: the series' text without gray_status
	gray  [][]bool      // per recording, per series: a gray series
	rng   *rand.Rand
	// the block being replayed: recording, next step, steps left
	rec, pos, left int
	sums           map[string]float64
}

func (c corpus) source(cfg config, sc scenario, rng *rand.Rand) (source, error) {
	recs := c.recordings(sc)
	if len(recs) == 0 {
		return nil, fmt.Errorf("no recordings for %s", sc.Name)
	}
	step := recs[0].Step
	for _, r := range recs {
		if r.Step != step {
			return nil, fmt.Errorf("recordings of %s have steps %s and %s", sc.Name, step, r.Step)
		}
	}
	k := max(1, int(math.Round(float64(15*time.Second)/float64(step))))
	s := &bootSource{cfg: cfg, step: time.Duration(k) * step, k: k, recs: recs, rng: rng, sums: map[string]float64{}}
	for _, r := range recs {
		s.incs = append(s.incs, r.Increments())
		var names []string
		var gray []bool
		for _, se := range r.Series {
			names = append(names, seriesText(se.Labels))
			gray = append(gray, se.Labels[instrument.LabelGrayStatus] == instrument.GrayStatusGray)
		}
		s.names, s.gray = append(s.names, names), append(s.gray, gray)
	}
	return s, nil
}

// seriesText is the series as the synthetic corpus writes it: the service's job, an instance
// per track and the recorded labels.
func seriesText(l map[string]string) string {
	inst := "10.0.0.1:8080"
	if l[instrument.LabelGrayStatus] == instrument.GrayStatusGray {
		inst = "10.0.0.2:8080"
	}
	parts := []string{`job="poolparity"`, fmt.Sprintf("instance=%q", inst), `pool_mode="unpooled"`}
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if k != "__name__" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, l[k]))
		}
	}
	return l["__name__"] + "{" + strings.Join(parts, ",") + "}"
}

func (s *bootSource) interval() time.Duration { return s.step }

func (s *bootSource) scrape(at time.Duration, out map[string]float64) {
	if at > 0 {
		for range s.k {
			s.advance(at)
		}
	}
	for name, v := range s.sums {
		out[name] = v
	}
}

// advance adds one recorded step, starting a new block when the last one ran out.
func (s *bootSource) advance(at time.Duration) {
	if s.left == 0 {
		s.rec = s.rng.IntN(len(s.recs))
		perMin := int(time.Minute / s.recs[s.rec].Step)
		n := s.recs[s.rec].Len()
		s.pos = 1 + s.rng.IntN(max(1, n-perMin))
		s.left = perMin
	}
	for i, name := range s.names[s.rec] {
		if s.gray[s.rec][i] && at <= s.cfg.Lead {
			continue
		}
		if s.pos < len(s.incs[s.rec][i]) {
			s.sums[name] += s.incs[s.rec][i][s.pos] // a new series starts from zero
		}
	}
	s.pos++
	s.left--
}

// recordingsSize is the corpus' size on disk.
func recordingsSize(dir string) int64 {
	var n int64
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

package diffcheck

import (
	"cmp"
	"slices"
)

// DefaultNoiseThreshold is the share of an endpoint's stable-vs-stable
// comparisons in which a path must differ to be noise, unless
// Options.NoiseThreshold says otherwise.
const DefaultNoiseThreshold = 0.2

// Sample is one stable-vs-stable comparison: the endpoint of its request
// (targets.Target.Key) and the diffs between the two stables' responses.
type Sample struct {
	Endpoint string
	Diffs    []Diff
}

// NoisePath is a path learned as noise.
type NoisePath struct {
	// Endpoint is the request's endpoint (targets.Target.Key).
	Endpoint string `json:"endpoint"`
	// Pattern is the path with its array indices written [*].
	Pattern string `json:"pattern"`
	// Share is the share of the endpoint's stable-vs-stable comparisons in
	// which the path differed; Samples is their number.
	Share   float64 `json:"share"`
	Samples int     `json:"samples"`
}

// Noise holds the paths that differ between two stables, by endpoint: a
// stable-vs-gray diff at one of them says nothing about gray. The zero
// Noise ignores nothing.
type Noise struct {
	paths map[[2]string]NoisePath
}

// Learn returns the noise in samples: a path pattern (Pattern) is noise for
// an endpoint when it differs in at least threshold (0 to 1; 0 means
// DefaultNoiseThreshold) of the endpoint's samples. A path is counted once
// per sample however often it differs in it. The shares are per endpoint,
// so that a field only one endpoint answers (a report's generated_at) is
// learned from that endpoint's samples alone.
func Learn(samples []Sample, threshold float64) Noise {
	if threshold <= 0 {
		threshold = DefaultNoiseThreshold
	}
	perEndpoint := map[string]int{}
	differs := map[[2]string]int{}
	for _, s := range samples {
		perEndpoint[s.Endpoint]++
		seen := map[string]bool{}
		for _, d := range s.Diffs {
			p := Pattern(d.Path)
			if !seen[p] {
				seen[p] = true
				differs[[2]string{s.Endpoint, p}]++
			}
		}
	}
	n := Noise{paths: map[[2]string]NoisePath{}}
	for k, c := range differs {
		total := perEndpoint[k[0]]
		if share := float64(c) / float64(total); share >= threshold {
			n.paths[k] = NoisePath{Endpoint: k[0], Pattern: k[1], Share: share, Samples: total}
		}
	}
	return n
}

// Ignores reports whether d, a diff of a request to endpoint, is at a path
// learned as noise for it.
func (n Noise) Ignores(endpoint string, d Diff) bool {
	_, ok := n.paths[[2]string{endpoint, Pattern(d.Path)}]
	return ok
}

// Paths returns the noise paths, the most frequent first (then by endpoint
// and pattern).
func (n Noise) Paths() []NoisePath {
	out := make([]NoisePath, 0, len(n.paths))
	for _, p := range n.paths {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b NoisePath) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.Pattern, b.Pattern))
	})
	return out
}

// Package profdiff turns the pprof profiles of the two tracks into evidence
// for a verdict: it fetches a CPU profile and an allocation profile from each
// track's pprof port (instrument/pprofhttp, net/http/pprof), and names the
// functions whose cost per request differs most between gray and stable.
//
// A sample is charged to the first function on its stack, from the leaf up,
// that belongs to the service's own code (Options.Own, by name prefix), so that
// time spent in runtime.memclrNoHeapPointers on behalf of pools.ScrubBytes is
// charged to pools.ScrubBytes, with the leaf kept beside it. Frames inlined
// into a caller count as functions of their own, as pprof shows them. A stack
// with no frame of the service's own code is charged to its leaf.
//
// Costs are divided by the requests each track served while it was profiled,
// so a track that got more traffic does not look costlier.
package profdiff

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/poolparity/poolparity/internal/catalog"
)

// Kind is a profile the package compares.
type Kind string

// The profiles compared.
const (
	// KindCPU is a CPU profile over a window (/debug/pprof/profile).
	KindCPU Kind = "cpu"
	// KindAllocSpace is the bytes allocated since the process started
	// (/debug/pprof/allocs, sample type alloc_space).
	KindAllocSpace Kind = "alloc_space"
)

// MaxProfileBytes bounds a fetched profile.
const MaxProfileBytes = 64 << 20

// ErrNoSamples is returned by Compare when both profiles hold no sample of
// the compared type.
var ErrNoSamples = errors.New("profdiff: no samples in either profile")

// DefaultRoot is the path of the profiles when a base URL names none: where
// net/http/pprof and instrument/pprofhttp serve them.
const DefaultRoot = "/debug/pprof/"

// URL is the address of kind's profile under base, the pprof root (for
// example http://127.0.0.1:6060/debug/pprof/; a base without a path, such as
// http://10.0.0.5:6060, means DefaultRoot on it). seconds is a CPU profile's
// length; for KindAllocSpace, seconds > 0 asks for a delta profile of the
// allocations made during that many seconds, 0 for those since the process
// started.
func URL(base string, kind Kind, seconds int) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("profdiff: pprof base %q is not an http URL", base)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DefaultRoot
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	switch kind {
	case KindCPU:
		if seconds < 1 {
			return "", fmt.Errorf("profdiff: a CPU profile needs seconds >= 1, got %d", seconds)
		}
		u.Path += "profile"
		u.RawQuery = "seconds=" + strconv.Itoa(seconds)
	case KindAllocSpace:
		u.Path += "allocs"
		if seconds < 0 {
			return "", fmt.Errorf("profdiff: an allocation profile needs seconds >= 0, got %d", seconds)
		}
		if seconds > 0 {
			u.RawQuery = "seconds=" + strconv.Itoa(seconds)
		}
	default:
		return "", fmt.Errorf("profdiff: unknown profile kind %q", kind)
	}
	return u.String(), nil
}

// Fetch gets kind's profile from the pprof root base and returns it parsed,
// with its raw bytes (for `go tool pprof`). A CPU profile takes seconds to
// answer; ctx bounds the wait.
func Fetch(ctx context.Context, client *http.Client, base string, kind Kind, seconds int) (*profile.Profile, []byte, error) {
	u, err := URL(base, kind, seconds)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("profdiff: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxProfileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("fetching %s: %s: %.200s", u, resp.Status, bytes.TrimSpace(raw))
	}
	if len(raw) > MaxProfileBytes {
		return nil, nil, fmt.Errorf("fetching %s: profile larger than %d bytes", u, MaxProfileBytes)
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the profile from %s: %w", u, err)
	}
	return p, raw, nil
}

// Options say what Compare charges and how much it keeps.
type Options struct {
	// Own are the name prefixes of the service's own functions, for
	// example "github.com/poolparity/poolparity/" or "main.".
	Own []string
	// Top is how many functions Compare keeps, the largest differences
	// first; 0 keeps 8.
	Top int
}

// Row is one function's cost per request on each track.
type Row struct {
	// Function is the function charged: the first of the service's own
	// on the stacks, or the leaf when there was none.
	Function string `json:"function"`
	// Leaf is the function where most of that cost was spent, when it is
	// not Function itself (runtime.memclrNoHeapPointers, runtime.mallocgc).
	Leaf string `json:"leaf,omitempty"`
	// Gray and Stable are the cost per request, in Diff.Unit.
	Gray   float64 `json:"gray"`
	Stable float64 `json:"stable"`
	// Delta is Gray - Stable.
	Delta float64 `json:"delta"`
}

// Diff is the comparison of one kind of profile between the tracks.
type Diff struct {
	Kind Kind `json:"kind"`
	// Unit of the Row costs and of the totals, per request: seconds of CPU
	// (KindCPU) or bytes allocated (KindAllocSpace).
	Unit catalog.Unit `json:"unit"`
	// Seconds is a CPU profile's length, or an allocation profile's window
	// (0: the processes' lives).
	Seconds int `json:"seconds,omitempty"`
	// GrayFile and StableFile are where the caller saved the raw profiles,
	// if it did (for go tool pprof -diff_base).
	GrayFile   string `json:"gray_file,omitempty"`
	StableFile string `json:"stable_file,omitempty"`
	// GrayRequests and StableRequests are the requests each track served
	// while it was profiled, which the costs are divided by.
	GrayRequests   float64 `json:"gray_requests"`
	StableRequests float64 `json:"stable_requests"`
	// GrayTotal and StableTotal are each track's whole cost per request.
	GrayTotal   float64 `json:"gray_total"`
	StableTotal float64 `json:"stable_total"`
	// Rows are the functions with the largest differences, largest first,
	// whichever track they favour.
	Rows []Row `json:"rows"`
}

// Compare charges each profile's samples of kind to functions (see the
// package comment), divides by the requests each track served while it was
// profiled, and returns the functions whose costs per request differ most.
func Compare(kind Kind, gray, stable *profile.Profile, grayRequests, stableRequests float64, opt Options) (Diff, error) {
	d := Diff{Kind: kind, GrayRequests: grayRequests, StableRequests: stableRequests}
	var typ, unit string
	var scale float64
	switch kind {
	case KindCPU:
		typ, unit, scale, d.Unit = "cpu", "nanoseconds", 1e-9, catalog.Seconds
	case KindAllocSpace:
		typ, unit, scale, d.Unit = "alloc_space", "bytes", 1, catalog.Bytes
	default:
		return d, fmt.Errorf("profdiff: unknown profile kind %q", kind)
	}
	if gray == nil || stable == nil {
		return d, errors.New("profdiff: a profile is missing")
	}
	if !(grayRequests > 0) || !(stableRequests > 0) || math.IsInf(grayRequests+stableRequests, 0) {
		return d, fmt.Errorf("profdiff: requests per track must be > 0, got gray %v, stable %v", grayRequests, stableRequests)
	}
	g, err := charge(gray, typ, unit, opt.Own)
	if err != nil {
		return d, fmt.Errorf("gray's profile: %w", err)
	}
	s, err := charge(stable, typ, unit, opt.Own)
	if err != nil {
		return d, fmt.Errorf("stable's profile: %w", err)
	}
	if g.total == 0 && s.total == 0 {
		return d, ErrNoSamples
	}
	d.GrayTotal = g.total * scale / grayRequests
	d.StableTotal = s.total * scale / stableRequests
	names := make(map[string]bool, len(g.by)+len(s.by))
	for n := range g.by {
		names[n] = true
	}
	for n := range s.by {
		names[n] = true
	}
	for n := range names {
		r := Row{Function: n, Gray: g.value(n) * scale / grayRequests, Stable: s.value(n) * scale / stableRequests}
		r.Delta = r.Gray - r.Stable
		// The leaf of the track that spent more here.
		if c := g.by[n]; r.Delta >= 0 && c != nil {
			r.Leaf = c.topLeaf()
		} else if c := s.by[n]; c != nil {
			r.Leaf = c.topLeaf()
		}
		if r.Leaf == n {
			r.Leaf = ""
		}
		d.Rows = append(d.Rows, r)
	}
	slices.SortFunc(d.Rows, func(a, b Row) int {
		if c := cmp.Compare(math.Abs(b.Delta), math.Abs(a.Delta)); c != 0 {
			return c
		}
		return strings.Compare(a.Function, b.Function)
	})
	top := opt.Top
	if top <= 0 {
		top = 8
	}
	if len(d.Rows) > top {
		d.Rows = d.Rows[:top]
	}
	return d, nil
}

// charged is one function's cost and the leaves it was spent in.
type charged struct {
	value  float64
	leaves map[string]float64
}

func (c *charged) topLeaf() string {
	best, name := -1.0, ""
	for n, v := range c.leaves {
		if v > best || (v == best && n < name) {
			best, name = v, n
		}
	}
	return name
}

type charges struct {
	total float64
	by    map[string]*charged
}

func (c charges) value(fn string) float64 {
	if x := c.by[fn]; x != nil {
		return x.value
	}
	return 0
}

// charge sums p's samples of type typ/unit by charged function.
func charge(p *profile.Profile, typ, unit string, own []string) (charges, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			idx = i
		}
	}
	if idx < 0 {
		var have []string
		for _, st := range p.SampleType {
			have = append(have, st.Type+"/"+st.Unit)
		}
		return charges{}, fmt.Errorf("no %s/%s samples (it has %s)", typ, unit, strings.Join(have, ", "))
	}
	out := charges{by: map[string]*charged{}}
	for _, smp := range p.Sample {
		if idx >= len(smp.Value) || smp.Value[idx] <= 0 {
			continue
		}
		v := float64(smp.Value[idx])
		out.total += v
		leaf, fn := "", ""
	stack:
		for _, loc := range smp.Location {
			for _, ln := range loc.Line {
				if ln.Function == nil {
					continue
				}
				name := ln.Function.Name
				if leaf == "" {
					leaf = name
				}
				if isOwn(name, own) {
					fn = name
					break stack
				}
			}
		}
		if leaf == "" {
			leaf = "(unknown)"
		}
		if fn == "" {
			fn = leaf
		}
		c := out.by[fn]
		if c == nil {
			c = &charged{leaves: map[string]float64{}}
			out.by[fn] = c
		}
		c.value += v
		c.leaves[leaf] += v
	}
	return out, nil
}

func isOwn(name string, own []string) bool {
	for _, p := range own {
		if p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ShortName is a function name without its package path
// ("github.com/x/y/internal/pools.ScrubBytes" is "pools.ScrubBytes").
func ShortName(fn string) string {
	// The package path ends at the last slash before the first dot after it.
	slash := strings.LastIndex(fn, "/")
	if paren := strings.Index(fn, "("); paren >= 0 && paren < slash {
		slash = strings.LastIndex(fn[:paren], "/")
	}
	return fn[slash+1:]
}

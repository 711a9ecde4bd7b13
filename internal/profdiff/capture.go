package profdiff

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/google/pprof/profile"
)

// ServiceCode returns the name prefixes of poolparity's services' own
// functions, for Options.Own: this module's packages (the instrument module
// included) and a package main (the example service's).
func ServiceCode() []string {
	return []string{"github.com/poolparity/poolparity/", "main."}
}

// Pair is one kind of profile taken from both tracks at the same time.
type Pair struct {
	Kind Kind
	// Seconds is the profile's window: a CPU profile's length, or, for
	// allocations, the window of a delta profile (0: since the processes
	// started).
	Seconds int
	// Gray and Stable are the parsed profiles; GrayRaw and StableRaw their
	// bytes, for `go tool pprof`.
	Gray, Stable       *profile.Profile
	GrayRaw, StableRaw []byte
}

// FetchPair fetches kind's profile from the gray and the stable pprof roots
// at the same time (see Fetch). For KindAllocSpace, seconds > 0 asks for the
// allocations made during that many seconds (a delta profile) instead of
// those since the process started. The error joins each track's, each
// naming its track; a Pair is returned only when both profiles came.
func FetchPair(ctx context.Context, client *http.Client, gray, stable string, kind Kind, seconds int) (Pair, error) {
	p := Pair{Kind: kind, Seconds: seconds}
	var errs [2]error
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		if p.Gray, p.GrayRaw, err = Fetch(ctx, client, gray, kind, seconds); err != nil {
			errs[0] = fmt.Errorf("gray track: %w", err)
		}
	})
	wg.Go(func() {
		var err error
		if p.Stable, p.StableRaw, err = Fetch(ctx, client, stable, kind, seconds); err != nil {
			errs[1] = fmt.Errorf("stable track: %w", err)
		}
	})
	wg.Wait()
	if err := errors.Join(errs[0], errs[1]); err != nil {
		return Pair{}, err
	}
	return p, nil
}

// Compare compares the pair per request (see the package function Compare),
// grayRequests and stableRequests being the requests each track served in
// the pair's window; the Diff carries the pair's Seconds.
func (p Pair) Compare(grayRequests, stableRequests float64, opt Options) (Diff, error) {
	d, err := Compare(p.Kind, p.Gray, p.Stable, grayRequests, stableRequests, opt)
	if err != nil {
		return d, fmt.Errorf("comparing the %s profiles: %w", p.Kind, err)
	}
	d.Seconds = p.Seconds
	return d, nil
}

// Requests returns the requests each profiled instance served during the
// profiles' window; Capture calls it once the profiles are in.
type Requests func(ctx context.Context) (gray, stable float64, err error)

// Capture takes, from both tracks at the same time, a CPU profile of seconds
// and the allocations made during the same seconds (a delta allocs
// profile), and compares each kind per request, dividing by what requests
// returns. It returns the comparisons it could make and an error for each it
// could not; a pprof root that does not answer fails both kinds. ctx bounds
// the whole capture: give it seconds and some slack.
func Capture(ctx context.Context, client *http.Client, gray, stable string, seconds int, requests Requests, opt Options) ([]Diff, error) {
	kinds := [2]Kind{KindCPU, KindAllocSpace}
	var pairs [2]Pair
	var errs [2]error
	var wg sync.WaitGroup
	for i, k := range kinds {
		wg.Go(func() { pairs[i], errs[i] = FetchPair(ctx, client, gray, stable, k, seconds) })
	}
	wg.Wait()
	if errs[0] != nil && errs[1] != nil {
		return nil, fmt.Errorf("fetching the profiles: %w", errors.Join(errs[0], errs[1]))
	}
	g, s, err := requests(ctx)
	if err != nil {
		return nil, fmt.Errorf("counting the requests the profiled instances served: %w", err)
	}
	var diffs []Diff
	var failed []error
	for i, p := range pairs {
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("fetching the %s profiles: %w", kinds[i], errs[i]))
			continue
		}
		d, err := p.Compare(g, s, opt)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		diffs = append(diffs, d)
	}
	return diffs, errors.Join(failed...)
}

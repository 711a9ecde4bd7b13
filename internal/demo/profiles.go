package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/poolparity/poolparity/internal/profdiff"
	"github.com/poolparity/poolparity/internal/splitter"
)

// ownCode are the name prefixes of the services' own functions: this
// module's packages (the instrument module included) and the example
// service's package main.
var ownCode = []string{"github.com/poolparity/poolparity/", "main."}

// profiles takes a CPU profile of cfg.ProfileSeconds from both tracks at
// once, then their allocation profiles, saves all four under OutDir/profiles
// and compares each pair per request: the CPU profiles by the requests the
// split sent each track meanwhile, the allocations (since each process
// started) by all the requests it sent each.
func (r *runner) profiles(ctx context.Context, sp *splitter.Splitter, stable, gray trackSpec) ([]profdiff.Diff, error) {
	secs := r.cfg.ProfileSeconds
	dir := filepath.Join(r.cfg.OutDir, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}} // bounded by ctx
	defer client.CloseIdleConnections()
	tracks := [2]trackSpec{stable, gray}
	sides := [2]splitter.Track{splitter.Stable, splitter.Gray}

	type fetched struct {
		p    *profile.Profile
		file string
		err  error
	}
	fetchBoth := func(kind profdiff.Kind, seconds int, suffix string) (out [2]fetched) {
		var wg sync.WaitGroup
		for i, t := range tracks {
			wg.Go(func() {
				p, raw, err := profdiff.Fetch(ctx, client, t.pprofURL(), kind, seconds)
				if err != nil {
					out[i].err = fmt.Errorf("%s track: %w", t.name, err)
					return
				}
				file := filepath.Join(dir, t.name+suffix)
				if err := os.WriteFile(file, raw, 0o644); err != nil {
					out[i].err = fmt.Errorf("saving the %s profile: %w", t.name, err)
					return
				}
				out[i] = fetched{p: p, file: file}
			})
		}
		wg.Wait()
		return out
	}
	var before [2]uint64
	for i, s := range sides {
		before[i] = sp.Stats(s).Requests
	}
	cpu := fetchBoth(profdiff.KindCPU, secs, ".cpu.pb.gz")
	var during, total [2]float64
	for i, s := range sides {
		n := sp.Stats(s).Requests
		during[i], total[i] = float64(n-before[i]), float64(n)
	}
	allocs := fetchBoth(profdiff.KindAllocSpace, 0, ".allocs.pb.gz")

	var diffs []profdiff.Diff
	var errs []error
	for _, c := range []struct {
		kind    profdiff.Kind
		got     [2]fetched
		reqs    [2]float64
		seconds int
	}{
		{profdiff.KindCPU, cpu, during, secs},
		{profdiff.KindAllocSpace, allocs, total, 0},
	} {
		if err := errors.Join(c.got[0].err, c.got[1].err); err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := profdiff.Compare(c.kind, c.got[1].p, c.got[0].p, c.reqs[1], c.reqs[0], profdiff.Options{Own: ownCode, Top: 6})
		if err != nil {
			errs = append(errs, fmt.Errorf("comparing the %s profiles: %w", c.kind, err))
			continue
		}
		d.Seconds, d.StableFile, d.GrayFile = c.seconds, c.got[0].file, c.got[1].file
		diffs = append(diffs, d)
	}
	return diffs, errors.Join(errs...)
}

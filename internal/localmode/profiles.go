package localmode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/profdiff"
)

// profiles takes a CPU profile of cfg.ProfileSeconds from both tracks at
// once, then their allocation profiles, saves all four under OutDir/profiles
// and compares each pair per request: the CPU profiles by the requests the
// load sent each track meanwhile, the allocations (since each process
// started) by all the requests it sent each.
func (r *runner) profiles(ctx context.Context, gens [2]*loadgen.Generator, stable, gray *trackRun) ([]profdiff.Diff, error) {
	secs := r.cfg.ProfileSeconds
	dir := filepath.Join(r.cfg.OutDir, "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}} // bounded by ctx
	defer client.CloseIdleConnections()

	// fetchBoth fetches kind from both tracks at once and saves the raw
	// profiles as <track><suffix>.
	fetchBoth := func(kind profdiff.Kind, seconds int, suffix string) (p profdiff.Pair, files [2]string, err error) {
		if p, err = profdiff.FetchPair(ctx, client, gray.PprofURL, stable.PprofURL, kind, seconds); err != nil {
			return p, files, err
		}
		for i, t := range [2]struct {
			name string
			raw  []byte
		}{{gray.name, p.GrayRaw}, {stable.name, p.StableRaw}} {
			files[i] = filepath.Join(dir, t.name+suffix)
			if err := os.WriteFile(files[i], t.raw, 0o644); err != nil {
				return p, files, fmt.Errorf("saving the %s profile: %w", t.name, err)
			}
		}
		return p, files, nil
	}
	var before [2]uint64
	for i, g := range gens {
		before[i] = g.Stats().Requests
	}
	cpu, cpuFiles, cpuErr := fetchBoth(profdiff.KindCPU, secs, ".cpu.pb.gz")
	var during, total [2]float64
	for i, g := range gens {
		n := g.Stats().Requests
		during[i], total[i] = float64(n-before[i]), float64(n)
	}
	allocs, allocFiles, allocErr := fetchBoth(profdiff.KindAllocSpace, 0, ".allocs.pb.gz")

	var diffs []profdiff.Diff
	var errs []error
	for _, c := range []struct {
		pair  profdiff.Pair
		files [2]string // gray, stable
		err   error
		reqs  [2]float64 // stable, gray
	}{
		{cpu, cpuFiles, cpuErr, during},
		{allocs, allocFiles, allocErr, total},
	} {
		if c.err != nil {
			errs = append(errs, c.err)
			continue
		}
		d, err := c.pair.Compare(c.reqs[1], c.reqs[0], profdiff.Options{Own: profdiff.ServiceCode(), Top: 6})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.GrayFile, d.StableFile = c.files[0], c.files[1]
		diffs = append(diffs, d)
	}
	return diffs, errors.Join(errs...)
}

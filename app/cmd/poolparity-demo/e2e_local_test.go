package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/adoptcheck"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestE2EExampleLocalMisuses runs the example service's two misuses that only the local mode's
// checks see whole, each against an unpooled stable, through `poolparity-parity local`'s library
// (internal/localmode) with the semconv rules and a real Prometheus, both at once, 60 seconds of
// load each (about 90 seconds in all), and holds their reports to adoptcheck.Problems:
//
//   - never-reset (output buffers pooled without a reset: each PNG carries the ones before it):
//     FAIL through the differential check (the PNGs compared as bytes) and the response-size row;
//   - never-put (images and output buffers taken from their pools and never put back): FAIL
//     through the sync.Pool hit-ratio row, with PoolParityLowSyncPoolHitRatio firing.
//
// The example's pooled gray is TestE2E's example-good (the demo) and poolparity-parity's
// TestLocalEndToEnd (the local mode).
//
// It needs POOLPARITY_E2E=1 (`make test-e2e`) and ./bin/prometheus, as TestE2E.
func TestE2EExampleLocalMisuses(t *testing.T) {
	if os.Getenv("POOLPARITY_E2E") != "1" {
		t.Skip("set POOLPARITY_E2E=1 to run the end-to-end scenarios (make test-e2e)")
	}
	// Beside TestE2E: its first scenarios (good, regression) assert only large effects, and
	// these 80 seconds of the light example service would otherwise add to make test-e2e's time.
	t.Parallel()
	root := repoRoot(t)
	prom := prometheusBin(t, root)
	dir := t.TempDir()
	example := goBuild(t, root, filepath.Join(dir, "imagesvc"), "./examples/imagesvc")
	reqs := filepath.Join(dir, "requests.txt")
	if err := os.WriteFile(reqs, []byte("GET /thumbnail/img-1?w=32\n\nGET /thumbnail/img-2?w=64\n\nGET /thumbnail/img-3?w=128\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Beyond adoptcheck.Problems: PNG bodies are not JSON, and the alert that names never-put's
	// cause fires.
	cases := []struct {
		mode  string
		check func(t *testing.T, r parity.Report)
	}{
		{adoptcheck.NeverReset, func(t *testing.T, r parity.Report) {
			if d := r.Differential; d != nil && !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "compared as bytes") }) {
				t.Errorf("differential check notes %q, want the PNGs said to be compared as bytes", d.Notes)
			}
		}},
		{adoptcheck.NeverPut, func(t *testing.T, r parity.Report) {
			if !firing(r, "PoolParityLowSyncPoolHitRatio") {
				t.Errorf("PoolParityLowSyncPoolHitRatio is not firing; alerts: %+v", r.Alerts)
			}
		}},
	}
	// Both at once: each run is light (40 requests a second), and the test's time is one run's.
	results := make([]localmode.Result, len(cases))
	errs := make([]error, len(cases))
	logs := make([]strings.Builder, len(cases))
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cases {
		cfg := localmode.Default()
		cmd := func(mode string) string { return "HTTP_ADDR=127.0.0.1:$PORT POOL_MODE=" + mode + " exec " + example }
		cfg.Stable = localmode.Track{Cmd: cmd("unpooled"), Mode: "unpooled"}
		cfg.Gray = localmode.Track{Cmd: cmd(c.mode), Mode: c.mode}
		cfg.RequestsFile, cfg.PrometheusBin, cfg.OutDir = reqs, prom, filepath.Join(dir, "out-"+c.mode)
		cfg.RPS, cfg.Duration = 40, 60*time.Second
		cfg.Rules.Sets = []string{"rules.http.metrics=semconv", "rules.runtime.metrics=otel", `rules.httpSelector=http_route!~".*(healthz|readyz|metrics).*"`}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			results[i], errs[i] = localmode.Run(ctx, cfg, &logs[i])
		})
	}
	wg.Wait()
	t.Logf("%d local runs in %s", len(cases), time.Since(start).Round(time.Second))
	noStrays(t, example, dir)
	for i, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Logf("%s\n%s", c.mode, logs[i].String())
			if errs[i] != nil {
				t.Fatalf("the local run: %v", errs[i])
			}
			r := results[i].Report
			for _, p := range adoptcheck.Problems(c.mode, r) {
				t.Error(p)
			}
			c.check(t, r)
		})
	}
}

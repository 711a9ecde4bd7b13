package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/profdiff"
	"github.com/poolparity/poolparity/internal/scenario"
)

// TestE2E runs six of the demo's scenarios in short form against the real
// service binary and a real Prometheus, each through the local mode's loop
// (internal/localmode) as `make demo` runs it, and asserts their verdicts on large
// effects only: the allocation ratio of a pooled gray track, its sync.Pool
// hit ratio, an injected latency of tens of milliseconds, and three pool
// misuses caught by the alerts that name them (misuse-dirty, misuse-reset,
// misuse-retain). Then three on the example service (SERVICE=example:
// examples/imagesvc): good and misuse-cap with the semconv rules, and good
// with the reference service's rules (NO DATA naming the series missing). It needs
// POOLPARITY_E2E=1 (`make test-e2e`, which .ci/run calls),
// ./bin/prometheus (hack/install-tools.sh prometheus) and about ten
// minutes.
func TestE2E(t *testing.T) {
	if os.Getenv("POOLPARITY_E2E") != "1" {
		t.Skip("set POOLPARITY_E2E=1 to run the end-to-end demo scenarios (make test-e2e)")
	}
	t.Parallel() // beside TestE2EExampleLocalMisuses
	root := repoRoot(t)
	prom := prometheusBin(t, root)
	svc := goBuild(t, root, filepath.Join(t.TempDir(), "poolparity"), "./app/cmd/poolparity")
	example := goBuild(t, root, filepath.Join(t.TempDir(), "imagesvc"), "./examples/imagesvc")
	duration := envOr("POOLPARITY_E2E_DURATION", "60s")

	scenarios := []struct {
		name     string
		wantExit []int
		check    func(t *testing.T, r parity.Report)
	}{
		{"good", []int{parity.ExitPass, parity.ExitFail}, func(t *testing.T, r parity.Report) {
			// Large effects only: pooling removes most allocation and hits.
			// Latency parity is printed but not asserted here: a p99 on a
			// shared 2-core machine is too noisy for a 70-second test.
			if v := value(t, r, "heap alloc per request"); v > 0.5 {
				t.Errorf("heap alloc per request gray/stable = %.2f, want <= 0.5", v)
			}
			if v := value(t, r, "sync.Pool hit ratio"); v < 0.9 {
				t.Errorf("gray sync.Pool hit ratio = %.3f, want >= 0.9", v)
			}
			if firing(r, "PoolParityErrorRegression") {
				t.Error("the error alert fires without any injected error")
			}
			// It ran on one Redis in the demo process, shared by both tracks
			// (DEMO_REDIS=embedded below), and the ratio above still holds.
			if kv := contextValue(r, "redis"); !strings.Contains(kv, "embedded in the demo process") {
				t.Errorf("redis %q, want the server embedded in the demo process", kv)
			}
		}},
		{"regression", []int{parity.ExitFail}, func(t *testing.T, r parity.Report) {
			if r.Verdict != parity.Fail {
				t.Errorf("verdict %s, want FAIL", r.Verdict)
			}
			// The large effect: 40ms added to every gray request.
			if v := value(t, r, "latency p95"); v < 2 {
				t.Errorf("p95 gray/stable = %.2f with 40ms injected, want >= 2", v)
			}
			if v := value(t, r, "latency p99"); v <= 1.1 {
				t.Errorf("p99 gray/stable = %.2f with 40ms injected, want > 1.1 (the alert's threshold)", v)
			}
			if !firing(r, "PoolParityLatencyRegression") {
				t.Errorf("PoolParityLatencyRegression is not firing; alerts: %+v", r.Alerts)
			}
			// The judge: the p99 row fails its ratio and its 5 ms floor, and the statistical
			// test confirms it.
			p99 := row(t, r, "latency p99")
			if p99.Verdict != parity.Fail {
				t.Errorf("latency p99 verdict %s (%s), want FAIL with 40ms injected", p99.Verdict, p99.Note)
			}
			if p99.Test == nil || p99.Test.Verdict != parity.Fail {
				t.Errorf("latency p99 statistical test %+v, want FAIL", p99.Test)
			}
			if r.Confirmed != parity.Fail {
				t.Errorf("confirmed verdict %s, want FAIL", r.Confirmed)
			}
		}},
		{"aa", []int{parity.ExitPass, parity.ExitFail}, func(t *testing.T, r parity.Report) {
			if v := value(t, r, "heap alloc per request"); v < 0.67 || v > 1.5 {
				t.Errorf("heap alloc per request gray/stable = %.2f for two unpooled tracks, want about 1", v)
			}
			for _, row := range r.Rows {
				if row.SLI == "sync.Pool hit ratio" {
					t.Errorf("an unpooled gray track got a hit-ratio row: %+v", row)
				}
			}
			// Latency is not asserted: with identical tracks the p99 ratio is
			// pure noise, which on a busy 2-core machine reaches +-60%.
			if firing(r, "PoolParityErrorRegression") {
				t.Error("the error alert fires on identical tracks")
			}
			// The judge: no latency or error regression that the thresholds, the floor and
			// the statistical test agree on (docs/verdict-eval.md: no A/A false alarm).
			if r.Statistical == "" {
				t.Error("the statistical test did not run")
			}
			for _, row := range parity.Confirm(r.Rows) {
				switch row.SLI {
				case "latency p95", "latency p99", "error ratio (5xx)":
					if row.Verdict == parity.Fail {
						t.Errorf("%s: a confirmed regression on identical tracks (%s; test %+v)", row.SLI, row.Note, row.Test)
					}
				}
			}
		}},
		// Two pool misuses, each caught by the alert that names its cause (issue 11).
		{"misuse-dirty", []int{parity.ExitFail}, func(t *testing.T, r parity.Report) {
			// A reset that forgets the decoded item: the sanitizer counts the
			// dirty objects and the critical alert fires.
			if r.Verdict != parity.Fail {
				t.Errorf("verdict %s, want FAIL", r.Verdict)
			}
			if !firing(r, "PoolParityDirtyObjects") {
				t.Errorf("PoolParityDirtyObjects is not firing; alerts: %+v", r.Alerts)
			}
		}},
		{"misuse-reset", []int{parity.ExitFail}, func(t *testing.T, r parity.Report) {
			// 8 MiB buffers in every pool, zeroed on every Put: gray spends more
			// CPU per request than stable (a correctly pooled gray spends less),
			// significantly so by the statistical test, and pins 8 MiB per pooled
			// object. With 2 MiB buffers the clear cost about what pooling saves
			// (1.00-1.05x in CI runs 6-10, and run 10 failed here); with 8 MiB,
			// 2.14x on 2026-11-25. The alert that names the cause is the CPU, the
			// latency or the live-heap one (docs/pool-misuse.md).
			if r.Verdict != parity.Fail {
				t.Errorf("verdict %s, want FAIL", r.Verdict)
			}
			if v := value(t, r, "CPU per request"); v <= 1 {
				t.Errorf("CPU per request gray/stable = %.2f with 2 MiB zeroed per Put, want above 1", v)
			}
			if rw := rowByID(r, catalog.CPUPerRequest); rw == nil || rw.Test == nil || rw.Test.Verdict != parity.Fail {
				t.Errorf("the statistical test does not find gray's CPU per request significantly worse: %+v", rw)
			}
			if sc, _ := scenario.Lookup(scenario.MisuseReset); !slices.ContainsFunc(sc.Alerts, func(a string) bool { return firing(r, a) }) {
				t.Errorf("none of %v fires; alerts: %+v", sc.Alerts, r.Alerts)
			}
			if firing(r, "PoolParityDirtyObjects") {
				t.Error("the dirty-object alert fires for a reset that clears everything")
			}
			// The evidence: the CPU profiles name the reset as where gray
			// spends the most beyond stable.
			var cpu *profdiff.Diff
			for i := range r.Profiles {
				if r.Profiles[i].Kind == profdiff.KindCPU {
					cpu = &r.Profiles[i]
				}
			}
			if cpu == nil || len(cpu.Rows) == 0 {
				t.Fatalf("no CPU profile comparison in the report (notes %q)", r.Notes)
			}
			if top := cpu.Rows[0]; !strings.HasSuffix(top.Function, "/pools.ScrubBytes") || top.Delta <= 0 {
				t.Errorf("the top CPU difference is %s (%+.0fµs per request), want pools.ScrubBytes, gray's costly reset; rows %+v", top.Function, top.Delta*1e6, cpu.Rows)
			}
		}},
		{"misuse-retain", []int{parity.ExitFail}, func(t *testing.T, r parity.Report) {
			// No size cap, waves of requests with large bodies: the gray pools
			// keep a wave's worth of grown buffers, and the memory alert fires
			// (its own floor, 16 MiB per pod, makes the effect large).
			if r.Verdict != parity.Fail {
				t.Errorf("verdict %s, want FAIL", r.Verdict)
			}
			if !firing(r, "PoolParityLiveHeapRegression") {
				t.Errorf("PoolParityLiveHeapRegression is not firing; alerts: %+v", r.Alerts)
			}
			if firing(r, "PoolParityDirtyObjects") {
				t.Error("the dirty-object alert fires for pools whose resets are correct")
			}
		}},
	}
	// The example service (examples/imagesvc: thumbnails, no Redis,
	// OpenTelemetry names only, read by the semconv rules): pooled right it
	// passes, with the SLIs it has no series for not judged; with misuse-cap
	// it fails on the alert that names the cause.
	scenarios = append(scenarios, []struct {
		name     string
		wantExit []int
		check    func(t *testing.T, r parity.Report)
	}{
		{"example-good", []int{parity.ExitPass, parity.ExitFail}, func(t *testing.T, r parity.Report) {
			// Large effects only, as for the reference service's good: the
			// unpooled PNG encoder allocates its zlib state per image.
			if v := value(t, r, "heap alloc per request"); v > 0.5 {
				t.Errorf("heap alloc per request gray/stable = %.2f, want <= 0.5", v)
			}
			// The example's pools hold whole images and lose them at every GC: in one
			// make test-e2e run its pooled gray read 93.2% (TestE2EDemoLocalCommand)
			// and 89.8% (here, under 0.9, which this bar was) over a minute, its
			// misuses 36.4% (misuse-cap) and 26.2% (never-put).
			if v := value(t, r, "sync.Pool hit ratio"); v < 0.8 {
				t.Errorf("gray sync.Pool hit ratio = %.3f, want >= 0.8", v)
			}
			if r.Verdict == parity.NoData {
				t.Errorf("verdict NO DATA: the SLIs the service has no series for must be left out, not make the verdict NO DATA")
			}
			for _, sli := range []catalog.ID{catalog.RedisPoolHitRatio, catalog.GCCPUShare} {
				if rw := rowByID(r, sli); rw != nil {
					t.Errorf("row %s is judged (%s) on a service without its series", sli, rw.Verdict)
				}
			}
			for _, want := range []string{"Redis pool hit ratio: not judged", "GC share of CPU: not judged"} {
				if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
					t.Errorf("no note %q in %q", want, r.Notes)
				}
			}
			if rw := rowByID(r, catalog.CPUPerRequest); rw == nil || rw.Value == nil {
				t.Errorf("CPU per request is not judged, though the service exposes process_cpu_seconds_total: %+v", rw)
			}
		}},
		{"example-misuse-cap", []int{parity.ExitFail}, func(t *testing.T, r parity.Report) {
			if r.Verdict != parity.Fail {
				t.Errorf("verdict %s, want FAIL", r.Verdict)
			}
			if !firing(r, "PoolParityLowSyncPoolHitRatio") {
				t.Errorf("PoolParityLowSyncPoolHitRatio is not firing; alerts: %+v", r.Alerts)
			}
			if v := value(t, r, "sync.Pool hit ratio"); v >= 0.5 {
				t.Errorf("gray sync.Pool hit ratio = %.3f with every image dropped at Put, want < 0.5", v)
			}
		}},
		// make demo as it is: the default gate (counts) and duration (3m). The short runs
		// above are judged by the thresholds (below): the count-based test needs about two
		// minutes of load before any verdict (MinSteps of 20 s steps). A good gray must never
		// FAIL, and its error and heap rows must PASS. Its latency rows PASS when the tracks
		// answer in a few ms (stable p95 4.0 ms: PASS e-values over 1e40); on a slower machine
		// (p95 9-19 ms, p99 21-39 ms in fresh-clone runs of 2026-12-07, alone or not) the p99
		// row's PASS e-value stays in single digits after 3 minutes and the verdict is NO DATA:
		// the reach of a PASS is issue 60's, and this scenario allows the NO DATA only when
		// it comes from the latency rows.
		{"good-default-gate", []int{parity.ExitPass, parity.ExitNoData}, func(t *testing.T, r parity.Report) {
			if r.Gate != parity.GateCounts || (r.Verdict != parity.Pass && r.Verdict != parity.NoData) {
				t.Errorf("gate %s verdict %s (%q), want counts PASS or NO DATA", r.Gate, r.Verdict, r.Reasons)
			}
			for _, sli := range []string{"latency p95", "latency p99", "error ratio (5xx)", "heap alloc per request"} {
				rw := row(t, r, sli)
				if rw.Test == nil || !rw.Test.Counts {
					t.Errorf("%s: count-based test %+v, want one", rw.SLI, rw.Test)
					continue
				}
				latency := strings.HasPrefix(sli, "latency")
				if rw.Test.Verdict != parity.Pass && !(latency && rw.Test.Verdict == parity.NoData) {
					t.Errorf("%s: count-based test %s (%s), want PASS", rw.SLI, rw.Test.Verdict, rw.Test.Note)
				}
				if rw.Test.Verdict == parity.NoData {
					t.Logf("%s: NO DATA after the demo's 3 minutes: %s", rw.SLI, rw.Test.Note)
				}
			}
		}},
		// The example judged by the reference service's rules (http_requests_total, which
		// otelhttp does not emit): NO DATA that names the series missing, never a PASS.
		{"example-wrong-rules", []int{parity.ExitNoData}, func(t *testing.T, r parity.Report) {
			want := `no series of http_requests_total{job="imagesvc"}, which the rule job_gray_status:http_requests:rate1m reads`
			if r.Verdict != parity.NoData || !strings.Contains(strings.Join(r.Reasons, "; "), want) {
				t.Errorf("verdict %s, reasons %q; want NO DATA naming %q", r.Verdict, r.Reasons, want)
			}
		}},
	}...)

	// The buffers misuse-retain keeps pile up over the first minute (its
	// alert once went pending 48 s into a 70 s run): two minutes of load.
	// aa asserts every row PASS, which a p99 of a shorter run on a shared
	// 2-core machine does not always give: 70 s. The example's scenarios
	// show their effects within seconds.
	longer := map[string]string{"misuse-retain": "2m", "aa": "70s", "example-good": "40s", "example-misuse-cap": "40s", "example-wrong-rules": "20s"}
	// Two scenarios run at a time (each demo on its own loopback ports, its own copy of the
	// binary, so that noStrays sees only its own processes): the assertions are large
	// effects, and a scenario shares the machine's contention with both of its tracks.
	start := time.Now()
	slots := make(chan struct{}, e2eParallel)
	t.Cleanup(func() {
		t.Logf("%d scenarios in %s, %d at a time", len(scenarios), time.Since(start).Round(time.Second), e2eParallel)
	})
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			out := t.TempDir()
			var buf bytes.Buffer
			timeout := 4 * time.Minute
			d := duration
			if l, ok := longer[sc.name]; ok {
				d = l
			}
			// The rules are rendered for the service's names, as `make demo` does; the
			// requests files are the checkout's.
			env := map[string]string{
				"SCENARIO": sc.name, "DURATION": d, "GRAY_WEIGHT": "50", "DEMO_GATE": string(parity.GateThresholds),
				"DEMO_PROMETHEUS_BIN": prom, "DEMO_OUT": out, "DEMO_ROOT": root,
			}
			if name, ok := strings.CutSuffix(sc.name, "-default-gate"); ok {
				env["SCENARIO"], timeout = name, 6*time.Minute
				delete(env, "DURATION")
				delete(env, "DEMO_GATE")
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			bin := svc
			if name, ok := strings.CutPrefix(sc.name, "example-"); ok {
				bin = example
				env["SERVICE"], env["SCENARIO"] = "example", name
				if name == "wrong-rules" {
					env["SCENARIO"], env["DEMO_RULES"] = "good", filepath.Join(root, "deploy/prometheus/poolparity-demo.rules.yml")
				}
			}
			bin = ownCopy(t, bin)
			env["DEMO_SERVICE_BIN"] = bin
			// good runs on the Redis embedded in the demo process, as on a
			// machine without redis-server (the newcomer's first run); the
			// others use the default (redis-server when installed).
			if sc.name == "good" {
				env["DEMO_REDIS"] = "embedded"
			}
			scStart := time.Now()
			code := cli.Exit(&buf, "poolparity-demo", run(ctx, nil, func(k string) string { return env[k] }, &buf, &buf))
			t.Logf("scenario %s: exit %d in %s\n%s", sc.name, code, time.Since(scStart).Round(time.Second), buf.String())
			if !contains(sc.wantExit, code) {
				t.Fatalf("exit status %d, want one of %v", code, sc.wantExit)
			}
			noStrays(t, bin, out)

			b, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r parity.Report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("report.json: %v", err)
			}
			if html, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !bytes.Contains(html, []byte("<svg")) {
				t.Errorf("report.html missing or without charts (%v)", err)
			}
			sc.check(t, r)
		})
	}
}

// e2eParallel is how many of TestE2E's scenarios run at a time.
const e2eParallel = 2

// ownCopy hard-links (or copies) the binary bin into a directory of t's, so that a scenario's
// processes carry a path of their own.
func ownCopy(t *testing.T, bin string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(bin))
	if err := os.Link(bin, dst); err == nil {
		return dst
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// rowByID returns the report's row of the SLI id, or nil.
func rowByID(r parity.Report, id catalog.ID) *parity.Row {
	for i := range r.Rows {
		if r.Rows[i].ID == id {
			return &r.Rows[i]
		}
	}
	return nil
}

func value(t *testing.T, r parity.Report, sli string) float64 {
	t.Helper()
	for _, row := range r.Rows {
		if row.SLI == sli {
			if row.Value == nil {
				t.Fatalf("%s has no data (%s)", sli, row.Note)
			}
			return *row.Value
		}
	}
	t.Fatalf("no %q row in the report", sli)
	return 0
}

func row(t *testing.T, r parity.Report, sli string) parity.Row {
	t.Helper()
	for _, rw := range r.Rows {
		if rw.SLI == sli {
			return rw
		}
	}
	t.Fatalf("no %q row in the report", sli)
	return parity.Row{}
}

func contextValue(r parity.Report, key string) string {
	for _, kv := range r.Context {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

func firing(r parity.Report, name string) bool {
	for _, a := range r.Alerts {
		if a.Name == name && a.State == "firing" {
			return true
		}
	}
	return false
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// noStrays fails when a process started by the demo (the service binary,
// or a Prometheus or redis-server whose files are under out) still runs.
func noStrays(t *testing.T, svc, out string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var strays []string
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				continue
			}
			cmd := strings.ReplaceAll(string(b), "\x00", " ")
			if strings.Contains(cmd, svc) || strings.Contains(cmd, out) {
				strays = append(strays, filepath.Base(filepath.Dir(p))+": "+cmd)
			}
		}
		if len(strays) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left running after the demo:\n%s", strings.Join(strays, "\n"))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// goBuild builds the package pkg of the module at root into out, and returns out.
func goBuild(t *testing.T, root, out, pkg string) string {
	t.Helper()
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// prometheusBin returns ./bin/prometheus. Outside CI it falls back to a
// prometheus on PATH (e.g. Debian's 2.42, for iteration) or skips; in CI
// (CI=true) a missing ./bin/prometheus fails the test.
func prometheusBin(t *testing.T, root string) string {
	t.Helper()
	if p := os.Getenv("DEMO_PROMETHEUS_BIN"); p != "" {
		return p
	}
	p := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing: hack/install-tools.sh prometheus must run before the e2e test", p)
	}
	if lp, err := exec.LookPath("prometheus"); err == nil {
		t.Logf("%s is missing; using %s from PATH (CI uses the pinned 3.x from hack/install-tools.sh)", p, lp)
		return lp
	}
	t.Skipf("%s is missing: run hack/install-tools.sh prometheus", p)
	return ""
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

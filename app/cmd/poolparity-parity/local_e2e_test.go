package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/testtool"
)

// localPrometheus returns ./bin/prometheus, or outside CI a prometheus on PATH; without either
// the test is skipped, and with CI=true it fails.
func localPrometheus(t *testing.T, root string) string {
	t.Helper()
	p := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") != "true" {
		if lp, err := exec.LookPath("prometheus"); err == nil {
			t.Logf("%s is missing; using %s from PATH", p, lp)
			return lp
		}
	}
	testtool.SkipOrFail(t, "%s is missing: run hack/install-tools.sh prometheus (CI needs it for the local mode's end-to-end test)", p)
	return ""
}

// TestLocalEndToEnd runs `poolparity-parity local` on two builds of the example service
// (examples/imagesvc: no Redis), unpooled stable and pooled gray, started from commands, with a
// real Prometheus and the semconv rules, for 45 seconds of load (about 70 seconds in all). It
// asserts a verdict that is not ERROR, the report files, the large allocation effect of pooling,
// and the differential check: the same thumbnails from both builds, so 0 mismatches of 400.
func TestLocalEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the local mode's end-to-end run takes about 70 seconds")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	prom := localPrometheus(t, root)
	dir := t.TempDir()
	svc := filepath.Join(dir, "imagesvc")
	build := exec.Command("go", "build", "-o", svc, "./examples/imagesvc")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example service: %v\n%s", err, out)
	}
	reqs := writeFile(t, dir, "requests.txt", "# thumbnails of three sizes\nGET /thumbnail/img-1?w=32\n\nGET /thumbnail/img-2?w=64\nAccept: image/png\n\nGET /thumbnail/img-3?w=128\n")
	out := filepath.Join(dir, "out")
	cmd := func(mode string) string { return "HTTP_ADDR=127.0.0.1:$PORT POOL_MODE=" + mode + " exec " + svc }
	code, stdout, stderr := runLocalArgs(t, map[string]string{"PARITY_LOCAL_DURATION": "45s"},
		"-stable-cmd", cmd("unpooled"), "-gray-cmd", cmd("pooled"), "-stable-mode", "unpooled", "-gray-mode", "pooled",
		"-requests", reqs, "-rps", "40", "-diff-sample", "400", "-prometheus", prom, "-out", out,
		"-set", "rules.http.metrics=semconv", "-set", "rules.runtime.metrics=otel",
		"-set", `rules.httpSelector=http_route!~".*(healthz|readyz|metrics).*"`)
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	if !slices.Contains([]int{parity.ExitPass, parity.ExitFail, parity.ExitNoData}, code) {
		t.Fatalf("exit %d, want a verdict (0, 1 or 3)", code)
	}
	for _, f := range []string{"report.txt", "report.json", "report.html", "prometheus.yml", "rules.yml", "logs/stable.log", "logs/gray.log"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || (st.Size() == 0 && !strings.HasPrefix(f, "logs/")) {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r parity.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict == parity.Error || parity.ExitStatus(r.Verdict) != code {
		t.Errorf("verdict %s with exit %d, want a verdict that is not ERROR and its exit status", r.Verdict, code)
	}
	if d := r.Differential; d == nil || d.Compared != 400 || d.Mismatches != 0 || d.Outcome != diffcheck.Pass || !d.OneStable {
		t.Errorf("differential check %+v, want 400 compared, 0 mismatches, PASS, one stable", d)
	}
	// PNG bodies are not JSON: the check compares them as bytes, and says so.
	if d := r.Differential; d == nil || !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "compared as bytes") }) {
		t.Errorf("differential check %+v, want a note that the bodies were compared as bytes", d)
	}
	if !strings.Contains(stdout, "differential check of responses") {
		t.Error("the printed report lacks the differential check")
	}
	// The judge says what it cannot see (issue 38): each track's pool_mode and instances, and
	// the live heap that OpenTelemetry's runtime instrumentation does not export.
	if want := "[{stable false [unpooled] 1} {gray true [pooled] 1}]"; fmt.Sprint(r.Tracks) != want {
		t.Errorf("tracks %v, want %s", r.Tracks, want)
	}
	if !slices.ContainsFunc(r.BlindSpots, func(b string) bool {
		return strings.HasPrefix(b, "neither track exports go_gc_heap_live_bytes, which alert PoolParityLiveHeapRegression reads")
	}) || !strings.Contains(stdout, "tracks: stable pool_mode unpooled, 1 instance; gray pool_mode pooled, 1 instance") {
		t.Errorf("blind spots %q (and the printed tracks), want the live heap named", r.BlindSpots)
	}
	response := false
	for _, row := range r.Rows {
		if row.SLI == "heap alloc per request" && (row.Value == nil || *row.Value > 0.5) {
			t.Errorf("heap alloc per request gray/stable %v, want <= 0.5 for a pooled gray (large effects only)", row.Value)
		}
		// otelhttp's http_server_response_body_size_bytes through the semconv rules: the same
		// thumbnails from both builds, so the same bytes per request.
		if row.SLI == "response bytes per request" {
			response = true
			if row.Value == nil || *row.Value < 0.95 || *row.Value > 1.05 || row.Verdict != parity.Pass {
				t.Errorf("response bytes per request %+v, want gray/stable about 1 and PASS", row)
			}
		}
	}
	if !response {
		t.Errorf("no response bytes per request row; notes %q", r.Notes)
	}
}

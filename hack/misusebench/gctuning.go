package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/loadgen"
)

// gcSetting is one row of the GC tuning table: a GOGC, and optionally a
// GOMEMLIMIT as a multiple of the live heap the same build measured under
// the default setting.
type gcSetting struct {
	Name   string
	GOGC   string  // "" leaves the Go default (100)
	LimitX float64 // > 0: GOMEMLIMIT = LimitX x the build's live heap under the default
}

// defaultGC is BENCH_GC's value for `make gc-tuning`: the seed's settings.
const defaultGC = "default,400,1000,off:1.1,off:2,off:8"

// parseGCSettings reads a comma-separated list: "default", a GOGC integer,
// or off:X (GOGC=off, GOMEMLIMIT at X times the measured live heap). The
// first must be "default": it measures the live heap the limits scale.
func parseGCSettings(s string) ([]gcSetting, error) {
	var out []gcSetting
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "default":
			out = append(out, gcSetting{Name: "default (GOGC=100)"})
		case strings.HasPrefix(f, "off:"):
			x, err := strconv.ParseFloat(strings.TrimPrefix(f, "off:"), 64)
			if err != nil || !(x >= 1 && x <= 100) {
				return nil, fmt.Errorf("BENCH_GC %q: want off:X with X from 1 to 100 (GOMEMLIMIT at X times the live heap)", f)
			}
			out = append(out, gcSetting{Name: fmt.Sprintf("GOGC=off, GOMEMLIMIT=%gx live heap", x), GOGC: "off", LimitX: x})
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 100000 {
				return nil, fmt.Errorf("BENCH_GC %q: want default, a GOGC from 1 to 100000, or off:X", f)
			}
			out = append(out, gcSetting{Name: "GOGC=" + f, GOGC: f})
		}
		if i == 0 && out[0].Name != "default (GOGC=100)" {
			return nil, fmt.Errorf("BENCH_GC %q: the first setting must be default (it measures the live heap the limits scale)", s)
		}
	}
	return out, nil
}

// gcResult is one build under one setting.
type gcResult struct {
	result
	Setting  gcSetting
	Limit    int64         // GOMEMLIMIT in bytes, 0: none
	GCShare  float64       // GC CPU / busy CPU (the runtime's /cpu/classes estimates)
	GCPerSec float64       // GC cycles per second
	LiveHeap float64       // go_gc_heap_live_bytes after the run
	PeakRSS  int64         // VmHWM: the process's peak resident set, bytes
	Open     loadgen.Stats // the open-loop run at Config.OpenRPS after the wrk run (zero: none)
}

// runtimeSample is what gcBench reads from the service's /metrics.
type runtimeSample struct {
	gcCPU, totalCPU, idleCPU, cycles, live float64
}

// scrapeRuntime reads the runtime series gcBench needs from url (/metrics).
func scrapeRuntime(ctx context.Context, url string) (runtimeSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return runtimeSample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return runtimeSample{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return runtimeSample{}, fmt.Errorf("parsing %s: %w", url, err)
	}
	var s runtimeSample
	var missing []string
	for name, dst := range map[string]*float64{
		"go_cpu_classes_gc_total_cpu_seconds_total": &s.gcCPU,
		"go_cpu_classes_total_cpu_seconds_total":    &s.totalCPU,
		"go_cpu_classes_idle_cpu_seconds_total":     &s.idleCPU,
		"go_gc_cycles_total_gc_cycles_total":        &s.cycles,
		"go_gc_heap_live_bytes":                     &s.live,
	} {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) == 0 {
			missing = append(missing, name)
			continue
		}
		m := f.GetMetric()[0]
		switch {
		case m.GetCounter() != nil:
			*dst = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			*dst = m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			*dst = m.GetUntyped().GetValue()
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("%s lacks %s", url, strings.Join(missing, ", "))
	}
	return s, nil
}

// peakRSS is a process's VmHWM from /proc/<pid>/status, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/%d/status VmHWM %q: %w", pid, rest, err)
				}
				return n << 10, nil
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM in kB", pid)
}

// gcBench measures every build (mode) under every GC setting: for each
// setting, the builds one after the other, so that a row's two measurements
// are minutes apart at most. The default setting comes first: the live heap
// each build holds under it sets that build's GOMEMLIMIT in the off:X rows.
func gcBench(ctx context.Context, cfg Config, env benchEnv, stdout io.Writer) error {
	settings, err := parseGCSettings(cfg.GC)
	if err != nil {
		return err
	}
	modes := splitModes(cfg.Modes)
	live := map[string]float64{}
	var rows [][]gcResult
	for _, st := range settings {
		var row []gcResult
		for i, mode := range modes {
			extra := []string{}
			if st.GOGC != "" {
				extra = append(extra, "GOGC="+st.GOGC)
			}
			var limit int64
			if st.LimitX > 0 {
				if live[mode] <= 0 {
					return fmt.Errorf("%s, %s: %w", mode, st.Name, errNoLive)
				}
				limit = int64(st.LimitX * live[mode])
				extra = append(extra, "GOMEMLIMIT="+strconv.FormatInt(limit, 10))
			}
			var g gcResult
			var before runtimeSample
			r, err := measure(ctx, cfg, env, mode, i%16, extra, func(ctx context.Context, pid int, addr string, after bool) error {
				s, err := scrapeRuntime(ctx, "http://"+addr+"/metrics")
				if err != nil {
					return err
				}
				if !after {
					before = s
					return nil
				}
				if busy := (s.totalCPU - s.idleCPU) - (before.totalCPU - before.idleCPU); busy > 0 {
					g.GCShare = (s.gcCPU - before.gcCPU) / busy
				}
				g.GCPerSec = (s.cycles - before.cycles) / cfg.Duration.Seconds()
				g.LiveHeap = s.live
				if g.PeakRSS, err = peakRSS(pid); err != nil {
					return err
				}
				g.Open, err = openLoop(ctx, cfg, addr)
				return err
			})
			if err != nil {
				return fmt.Errorf("%s, %s: %w", mode, st.Name, err)
			}
			g.result, g.Setting, g.Limit = r, st, limit
			if st.LimitX == 0 && st.GOGC == "" {
				live[mode] = g.LiveHeap
			}
			fmt.Fprintf(os.Stderr, "gc-tuning: %-36s %-9s %7.0f req/s  p99 %-8s GC %4.1f%%  %5.1f GC/s  RSS %5.1f MiB  live %5.1f MiB\n  open loop: %v\n",
				st.Name, mode, r.RPS, r.P99.Round(10*time.Microsecond), g.GCShare*100, g.GCPerSec, float64(g.PeakRSS)/(1<<20), g.LiveHeap/(1<<20), g.Open)
			row = append(row, g)
		}
		rows = append(rows, row)
	}
	return emit(stdout, cfg.Write, gcBeginMarker, gcEndMarker, renderGC(cfg, rows))
}

const (
	gcBeginMarker = "<!-- gctuning:begin -->"
	gcEndMarker   = "<!-- gctuning:end -->"
)

// openLoop runs the load generator at cfg.OpenRPS against the service at addr for
// cfg.OpenDuration: arrivals on a schedule that never waits for answers, so the client-side
// p99 counts the time a request waited to be sent (wrk's does not). A zero OpenRPS skips it.
func openLoop(ctx context.Context, cfg Config, addr string) (loadgen.Stats, error) {
	if cfg.OpenRPS <= 0 {
		return loadgen.Stats{}, nil
	}
	g, err := loadgen.New(loadgen.Config{
		BaseURL: "http://" + addr, Duration: cfg.OpenDuration, RPS: cfg.OpenRPS,
		MaxRequests: int(cfg.OpenRPS*cfg.OpenDuration.Seconds()) + 1, Concurrency: 512, Keys: 200, Seed: 1,
	}, nil)
	if err != nil {
		return loadgen.Stats{}, err
	}
	st, err := g.Run(ctx)
	if err != nil {
		return st, fmt.Errorf("open-loop run at %g req/s: %w", cfg.OpenRPS, err)
	}
	return st, nil
}

// openCell is the open-loop run's client-side p99, with the arrivals it dropped (the
// service fell so far behind that 512 requests were in flight) and its errors when any.
func openCell(st loadgen.Stats) string {
	if st.Arrivals == 0 {
		return "-"
	}
	s := st.Latency.P99.Round(10 * time.Microsecond).String()
	if st.Dropped > 0 || st.Errors > 0 {
		s += fmt.Sprintf(" (%d dropped, %d errors)", st.Dropped, st.Errors)
	}
	return s
}

func renderGC(cfg Config, rows [][]gcResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s UTC on %d CPUs (%s/%s), wrk -t%d -c%d, %s per build and setting after a %s warm-up "+
		"(`make gc-tuning`), then an open-loop run of %s at %g req/s (internal/loadgen). Throughput is relative to the same "+
		"build under the default; GC share is the runtime's GC CPU over its busy CPU during the wrk run; peak RSS is the "+
		"process's VmHWM.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH,
		cfg.Threads, cfg.Connections, cfg.Duration, cfg.Warmup, cfg.OpenDuration, cfg.OpenRPS)
	fmt.Fprintln(&b, "| setting | build | GOMEMLIMIT | req/s | vs default | p99 (wrk) | p99 open loop | GC share of CPU | GC cycles/s | peak RSS | live heap |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|")
	base := map[string]float64{}
	for _, row := range rows {
		for _, g := range row {
			if _, ok := base[g.Mode]; !ok {
				base[g.Mode] = g.RPS
			}
			limit := "-"
			if g.Limit > 0 {
				limit = fmt.Sprintf("%.1f MiB", float64(g.Limit)/(1<<20))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.2f | %s | %s | %.1f%% | %.1f | %.1f MiB | %.1f MiB |\n",
				g.Setting.Name, g.Mode, limit, g.RPS, g.RPS/base[g.Mode], g.P99.Round(10*time.Microsecond), openCell(g.Open),
				g.GCShare*100, g.GCPerSec, float64(g.PeakRSS)/(1<<20), g.LiveHeap/(1<<20))
		}
	}
	return b.String()
}

// errNoLive is returned when a limit row comes before its build's default.
var errNoLive = errors.New("no live heap measured under the default setting")

package localmode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/loadgen"
	"github.com/poolparity/poolparity/internal/localproc"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/recorded"
	"github.com/poolparity/poolparity/internal/targets"
)

// loadMargin is how long the load runs past Duration: the report is read
// while live traffic still feeds the rules, and the load is stopped right
// after.
const loadMargin = time.Minute

// PrometheusConfig renders the Prometheus configuration of a run: scrape
// and evaluate every interval, load rules, scrape stable and gray (host:port)
// at metricsPath as job, each with its track as the target label
// gray_status. honor_labels is false, so the target's label wins; the copy
// a service puts on its own series (exported_gray_status) is dropped, as the
// chart's ServiceMonitor does, and a service that does not label its series
// still has two tracks. So are the job and instance a collector scraped in
// a track's place names its series after (exported_job, exported_instance).
func PrometheusConfig(job string, interval time.Duration, rules, metricsPath, stable, gray string) string {
	return localproc.PrometheusHeader("poolparity-parity local", interval, rules) + fmt.Sprintf(`  - job_name: %[1]q
    metrics_path: %[2]q
    honor_labels: false
    static_configs:
      - targets: [%[3]q]
        labels:
          gray_status: "false"
      - targets: [%[4]q]
        labels:
          gray_status: "true"
    metric_relabel_configs:
      - action: labeldrop
        regex: exported_(gray_status|job|instance)
`, job, metricsPath, stable, gray)
}

// startPrometheus writes the configuration, starts Prometheus on a free
// loopback port and waits until it scrapes both tracks.
func (r *runner) startPrometheus(ctx context.Context, bin, rules string, stable, gray *trackRun) (promread.Querier, error) {
	conf := filepath.Join(r.cfg.OutDir, "prometheus.yml")
	text := PrometheusConfig(r.cfg.job(), r.cfg.ScrapeInterval, rules, r.cfg.MetricsPath, stable.scrapeHost, gray.scrapeHost)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", conf, err)
	}
	port, err := r.ports.Reserve(0)
	if err != nil {
		return nil, fmt.Errorf("prometheus port: %w", err)
	}
	p, promURL, err := localproc.StartPrometheus(ctx, r.client, localproc.Prometheus{
		Bin: bin, ConfigFile: conf, DataDir: r.tmpDir, LogDir: r.logDir, Port: port, Env: os.Environ(),
	})
	if p != nil {
		r.procs.Add(p)
	}
	if err != nil {
		return nil, err
	}
	q, err := promread.New(promURL, promread.ClientConfig{})
	if err != nil {
		return nil, err
	}
	return q, localproc.WaitScraping(ctx, p, q, r.cfg.selector(), 2)
}

// generators returns the load of each track: the requests file replayed
// in order, at the track's share of the rate; with live, gray's load hands
// it samples of its responses.
func (r *runner) generators(stable, gray *trackRun, live *liveDiff) ([2]*loadgen.Generator, error) {
	var gens [2]*loadgen.Generator
	span := r.cfg.Duration + loadMargin
	order := loadgen.RoundRobin
	if r.cfg.Random {
		order = loadgen.Random
	}
	for i, t := range []*trackRun{stable, gray} {
		rps := r.cfg.RPS * (1 - r.cfg.GrayWeight)
		if i == 1 {
			rps = r.cfg.RPS * r.cfg.GrayWeight
		}
		lc := loadgen.Config{
			BaseURL: t.url, Duration: span, MaxRequests: int(rps*span.Seconds()*1.1) + 100,
			RPS: rps, Concurrency: r.cfg.Concurrency, Keys: 1, Seed: r.cfg.Seed + uint64(i+1), Targets: r.targets,
			Order: order, Burst: r.cfg.Burst,
			// Both tracks' JSON answers are parsed: a malformed one counts as
			// a failed request (parity.Report.AddLoadErrors).
			CheckJSON: true,
		}
		if i == 1 && live != nil {
			lc.Sample = live.sampling(r.cfg.DiffSample, func(i int) bool { return r.excluded(r.targets[i]) })
		}
		g, err := loadgen.New(lc, nil)
		if err != nil {
			return gens, fmt.Errorf("%s track's load: %w", t.name, err)
		}
		gens[i] = g
	}
	return gens, nil
}

// loadAndRead runs the load for Duration, showing progress, reads the
// parity report and its charts while the load still runs, finishes the
// differential check under load (Config.DiffUnderLoad) and stops the load.
// The check's report is nil when it did not run under load.
func (r *runner) loadAndRead(ctx context.Context, q promread.Querier, stable, gray *trackRun) (parity.Report, [2]loadgen.Stats, *diffcheck.Report, error) {
	var stats [2]loadgen.Stats
	var live *liveDiff
	if r.cfg.underLoad() {
		var err error
		if live, err = r.newLiveDiff(ctx, stable); err != nil {
			return parity.Report{}, stats, nil, fmt.Errorf("the differential check under load: %w", err)
		}
		defer live.abort()
		fmt.Fprintf(r.stdout, "local: comparing up to %d of gray's load responses (one in each block of %d arrivals) with stable's answers as the load runs, %s\n",
			r.cfg.DiffSample, live.every, r.cfg.liveMethod())
	}
	gens, err := r.generators(stable, gray, live)
	if err != nil {
		return parity.Report{}, stats, nil, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	for i, g := range gens {
		go func() {
			stats[i], _ = g.Run(loadCtx)
			done <- struct{}{}
		}()
	}
	stop := func() {
		stopLoad()
		<-done
		<-done
	}
	start := time.Now()
	if err := r.progress(ctx, start, gens); err != nil {
		stop()
		return parity.Report{}, stats, nil, err
	}
	report, err := r.evaluate(ctx, q, start)
	if err == nil {
		// The evidence, taken while the load still runs.
		err = r.evidence(ctx, q, &report, start, gens, stable, gray)
	}
	var diff *diffcheck.Report
	if live != nil && err == nil {
		// The comparisons still under way end while the load goes on.
		d := live.finish(r.cfg.liveMethod(), r.cfg.DiffSample)
		fmt.Fprintf(r.stdout, "local: differential check %s: %s\n", d.Method, parity.DiffLine(d))
		diff = &d
	}
	stop()
	return report, stats, diff, err
}

// evidence takes what a run adds to its report while the load still runs:
// on a FAIL, both tracks' profiles compared (ProfileSeconds); and the
// recorded series (Record).
func (r *runner) evidence(ctx context.Context, q promread.Querier, report *parity.Report, start time.Time, gens [2]*loadgen.Generator, stable, gray *trackRun) error {
	cfg := r.cfg
	if report.Verdict == parity.Fail && cfg.ProfileSeconds > 0 && stable.PprofURL != "" && gray.PprofURL != "" {
		fmt.Fprintf(r.stdout, "local: FAIL: profiling both tracks for %ds to compare them (the load goes on)\n", cfg.ProfileSeconds)
		var err error
		if report.Profiles, err = r.profiles(ctx, gens, stable, gray); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			report.Notes = append(report.Notes, "profiles not compared: "+err.Error())
		}
	}
	if cfg.Record == "" {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rec, err := recorded.Record(qctx, q, start, time.Now(), cfg.ScrapeInterval)
	if err != nil {
		return fmt.Errorf("recording the series: %w", err)
	}
	rec.Name, rec.Scenario, rec.Command = filepath.Base(cfg.Record), cfg.RecordName, cfg.RecordCommand
	if err := rec.WriteFile(cfg.Record); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "local: recorded %d series, %d steps of %s, into %s\n", len(rec.Series), rec.Len(), rec.Step, cfg.Record)
	return nil
}

// evaluate reads the report as the demo does, with the configured gate:
// the statistical test samples the window's rules since the rules filled,
// and the sequential one from the load's start.
func (r *runner) evaluate(ctx context.Context, q promread.Querier, start time.Time) (parity.Report, error) {
	cfg := r.cfg
	now := time.Now()
	statSpan := max(now.Sub(start)-30*time.Second, 10*cfg.ScrapeInterval)
	cat := catalog.Default()
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	report, err := parity.Evaluate(qctx, q, cat, parity.Options{
		At: now, Window: cfg.Rules.Window, Selector: r.cfg.selector(),
		Stat: parity.Gate(cfg.Gate).Mode(), StatWindow: statSpan, StatStep: max(statSpan/20, cfg.ScrapeInterval), SampleFamily: "-",
		StatSince: start, Alerts: true, Pools: true,
		Inputs: true, StablePoolMode: cfg.Stable.Mode, GrayPoolMode: cfg.Gray.Mode,
	})
	if err != nil {
		if errors.Is(err, parity.ErrNoRules) {
			err = fmt.Errorf("%w; do the rules' overrides (-set, -values) name the service's metrics?", err)
		}
		return report, err
	}
	step := max(cfg.ScrapeInterval, now.Sub(start)/150).Round(time.Second)
	report.Charts, err = parity.Charts(qctx, q, cat, cfg.Rules.Window, r.cfg.selector(), start, now, step)
	return report, err
}

// progress prints a progress line every cfg.Progress until the load has
// run cfg.Duration or ctx ends.
func (r *runner) progress(ctx context.Context, start time.Time, gens [2]*loadgen.Generator) error {
	ticker := time.NewTicker(r.cfg.Progress)
	defer ticker.Stop()
	end := time.NewTimer(r.cfg.Duration)
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end.C:
			fmt.Fprintln(r.stdout, "local: reading the parity report from Prometheus ...")
			return nil
		case <-ticker.C:
			s, g := gens[0].Stats(), gens[1].Stats()
			el := time.Since(start).Seconds()
			fmt.Fprintf(r.stdout, "[%s/%s] stable %d requests (%.1f/s, %d errors, %d malformed, %d dropped), gray %d (%.1f/s, %d errors, %d malformed, %d dropped)\n",
				time.Since(start).Round(time.Second), r.cfg.Duration, s.Requests, float64(s.Requests)/el, s.Errors, s.Malformed, s.Dropped,
				g.Requests, float64(g.Requests)/el, g.Errors, g.Malformed, g.Dropped)
		}
	}
}

// differential runs the differential check of the tracks' responses after
// the load, when asked and not run under load, and puts it into the report.
// A check that cannot run is a note; ctx's end is an error.
func (r *runner) differential(ctx context.Context, report *parity.Report, stable, gray *trackRun) error {
	if r.cfg.DiffSample == 0 {
		report.Notes = append(report.Notes, "differential check of responses: not run (-diff-sample 0)")
		return nil
	}
	fmt.Fprintf(r.stdout, "local: comparing the responses of %d requests after the load, one at a time (stable asked twice, gray once) ...\n", r.cfg.DiffSample)
	d, err := diffcheck.Check(ctx, nil, stable.url, "", gray.url, r.diffTargets, diffcheck.Options{Requests: r.cfg.DiffSample, Ignore: r.cfg.DiffIgnore})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		report.Notes = append(report.Notes, "differential check of responses: not run: "+err.Error())
		return nil
	}
	d.Method = "after the load, one request at a time"
	why := "-diff-under-load=false"
	if r.cfg.DiffRequestsFile != "" {
		why = "-diff-requests names the requests compared: the load's writes would race comparisons made under it"
	}
	d.Notes = append(d.Notes, "responses only concurrency corrupts are not seen one request at a time ("+why+")")
	report.AddDifferential(d)
	return nil
}

// excluded reports whether the differential check leaves t out
// (Config.DiffExclude, checked by Validate).
func (r *runner) excluded(t targets.Target) bool {
	return r.exclude != nil && r.exclude(t)
}

// context is the report's context lines.
func (r *runner) context(stable, gray *trackRun, stats [2]loadgen.Stats, promVersion string) []parity.KV {
	cmd := func(t *trackRun) string {
		if t.Cmd == "" {
			return t.desc() + ", already running"
		}
		return fmt.Sprintf("%s, started: sh -c %q", t.desc(), t.Cmd)
	}
	rules := "the chart's defaults"
	if len(r.cfg.Rules.Sets) > 0 || len(r.cfg.Rules.ValuesFiles) > 0 {
		rules = strings.Join(append(append([]string(nil), r.cfg.Rules.ValuesFiles...), r.cfg.Rules.Sets...), " ")
	}
	load := func(s loadgen.Stats) string {
		return fmt.Sprintf("%d requests, %d errors, %d 4xx, %d malformed JSON, %d dropped; %s", s.Requests, s.Errors, s.ClientErrors, s.Malformed, s.Dropped, s.Latency)
	}
	return []parity.KV{
		{Key: "stable", Value: cmd(stable)},
		{Key: "gray", Value: cmd(gray)},
		{Key: "requests", Value: r.requestsDesc()},
		{Key: "differential check", Value: r.diffDesc()},
		{Key: "poisoned Puts", Value: r.poisonDesc()},
		{Key: "load on stable", Value: load(stats[0])},
		{Key: "load on gray", Value: load(stats[1])},
		{Key: "prometheus", Value: fmt.Sprintf("Prometheus %s, scrape and evaluation every %s, job %s", promVersion, r.cfg.ScrapeInterval, r.cfg.job())},
		{Key: "rules", Value: fmt.Sprintf("window %s, alerts for %s, overrides: %s", r.cfg.Rules.Window, r.cfg.Rules.For, rules)},
	}
}

// poisonDesc says whether the tracks' commands were asked to poison their
// pools' objects at Put.
func (r *runner) poisonDesc() string {
	if !r.cfg.Poison {
		return "off (-poison turns it on)"
	}
	return PoisonEnv + "=1 in both commands' environment (a service that reads it overwrites each object put back and checks it at Get)"
}

// diffDesc describes the differential check.
func (r *runner) diffDesc() string {
	c := r.cfg
	var s string
	switch {
	case c.DiffSample == 0:
		return "not run (-diff-sample 0)"
	case c.underLoad():
		s = fmt.Sprintf("%s: up to %d of gray's load responses, one at random in each block of %d arrivals, each compared with stable's answer asked twice at once",
			c.liveMethod(), c.DiffSample, c.sampleEvery())
	default:
		s = fmt.Sprintf("after the load, one request at a time: %d requests, stable asked twice, gray once", c.DiffSample)
	}
	if len(c.DiffExclude) > 0 {
		s += "; excluded: " + strings.Join(c.DiffExclude, ", ")
	}
	if len(c.DiffIgnore) > 0 {
		s += "; ignored: " + strings.Join(c.DiffIgnore, ", ")
	}
	return s
}

// requestsDesc describes the load and the differential check's requests.
func (r *runner) requestsDesc() string {
	order := "replayed in order"
	if r.cfg.Random {
		order = fmt.Sprintf("drawn at random, seed %d", r.cfg.Seed)
	}
	if r.cfg.Burst > 1 {
		order += fmt.Sprintf(", in waves of %d", r.cfg.Burst)
	}
	s := fmt.Sprintf("%s (%d requests, %s), %.0f req/s open loop for %s, %.0f%% to gray", r.cfg.RequestsFile, len(r.targets), order, r.cfg.RPS, r.cfg.Duration, 100*r.cfg.GrayWeight)
	if r.cfg.DiffRequestsFile != "" {
		s += fmt.Sprintf("; differential check from %s (%d requests)", r.cfg.DiffRequestsFile, len(r.diffTargets))
	}
	return s
}

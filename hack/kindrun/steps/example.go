package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/docblocks"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/scenario"
)

// The example service's releases: examples/imagesvc installed with the same chart, as a team
// installs its own service. The good one is installed and judged by docs/adopt.md's commands
// (sections 5 and 6), verbatim; the misused one (its gray track in POOL_MODE=misuse-cap) beside it,
// in a namespace of its own, by the harness, with the harness's short alert durations.
const (
	exampleNamespace       = "poolparity-example"
	exampleRelease         = "imagesvc"
	exampleMisuseNamespace = "poolparity-example-misuse"
	exampleMisuseRelease   = "imagesvc-misuse"
	// exampleLoad and exampleRPS are each release's load: the 1m rule family fills, and the
	// misused gray's low hit ratio alert (values-test.yaml: 1m family, for 1m) fires, before the
	// reports are read 20 s before the load ends.
	exampleLoad = 2 * time.Minute
	exampleRPS  = 30
	// adoptDoc is the guide whose kind:* blocks the run executes.
	adoptDoc = "docs/adopt.md"
)

// adoptBlocks returns the guide's blocks of runner.
func adoptBlocks(env *harness.Env, runner string) ([]docblocks.Block, error) {
	md, err := os.ReadFile(filepath.Join(env.Cfg.Root, adoptDoc))
	if err != nil {
		return nil, err
	}
	blocks, err := docblocks.Parse(string(md))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", adoptDoc, err)
	}
	bs := docblocks.Of(blocks, runner)
	if len(bs) == 0 {
		return nil, fmt.Errorf("%s has no %q block", adoptDoc, runner)
	}
	return bs, nil
}

// runAdoptBlocks runs the guide's blocks of runner, verbatim, with bash from the repository root,
// ./bin first on PATH, the cluster's kubeconfig and vars; their output goes to stdout (when not
// nil) and to logs/example.log.
func runAdoptBlocks(ctx context.Context, env *harness.Env, runner string, vars []string, stdout *bytes.Buffer) error {
	bs, err := adoptBlocks(env, runner)
	if err != nil {
		return err
	}
	vars = append(vars, "PATH="+env.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, b := range bs {
		c := harness.Cmd{Name: "bash", Args: []string{"-euo", "pipefail", "-c", b.Script}, Env: vars, Dir: env.Cfg.Root}
		if stdout != nil {
			c.Stdout = stdout
		}
		if err := env.Run(ctx, "example", c); err != nil {
			return fmt.Errorf("%s:%d (%s): %w", adoptDoc, b.Line, runner, err)
		}
	}
	return nil
}

// installExample installs the example's two releases: the good one by the guide's install block
// (helm upgrade --install with examples/imagesvc/values.yaml, then helm test), in a namespace the
// harness creates restricted; the misused one by the harness, with the same values file, the
// harness's test values and a gray track in misuse-cap.
func installExample(ctx context.Context, env *harness.Env) error {
	if err := restrictedNamespace(ctx, env, exampleNamespace); err != nil {
		return err
	}
	repo, tag, _ := strings.Cut(images.ExampleImage, ":")
	vars := []string{"IMAGE_REPOSITORY=" + repo, "IMAGE_TAG=" + tag}
	var testImageSets []string
	if env.Cfg.Mode == "offline" {
		testRepo, testTag, _ := strings.Cut(images.TestImage, ":")
		testImageSets = []string{"--set", "tests.image.repository=" + testRepo, "--set", "tests.image.tag=" + testTag}
		vars = append(vars, "HELM_EXTRA_ARGS="+strings.Join(testImageSets, " "))
	}
	env.Logf("example: installing %s in %s with %s's commands", exampleRelease, exampleNamespace, adoptDoc)
	if err := runAdoptBlocks(ctx, env, "kind:install", vars, nil); err != nil {
		return err
	}
	env.Logf("example: installing %s in %s, its gray track in misuse-cap", exampleMisuseRelease, exampleMisuseNamespace)
	sets := []string{"--set", "image.repository=" + repo, "--set", "image.tag=" + tag, "--set", "tracks.gray.poolMode=" + scenario.MisuseCap}
	sets = append(append(sets, rulesInNamespace(exampleMisuseNamespace)...), testImageSets...)
	values := filepath.Join(env.Cfg.Root, "examples", "imagesvc", "values.yaml")
	return helmInstallIn(ctx, env, exampleMisuseNamespace, exampleMisuseRelease, []string{values}, sets...)
}

// exampleStep loads and judges the example service's two releases, installed by helm-install,
// at once: the guide's judge command must say PASS for the good one, with the Redis and GC-share
// SLIs left out (the service has neither series) and pooling's large allocation effect shown;
// the misused one must FAIL with PoolParityLowSyncPoolHitRatio firing. Then both releases are
// uninstalled.
type exampleStep struct{}

// exampleDef declares the "example" step.
func exampleDef() harness.Def {
	return harness.Def{Step: exampleStep{}, Needs: []string{"env", "helm-install"}, Target: "example", Doc: "Load the example service (examples/imagesvc) and judge it with docs/adopt.md's command: PASS, Redis and GC share not judged.", Default: true, Beside: BesideRouting}
}

// Name implements Step.
func (exampleStep) Name() string { return "example" }

// exampleRun is one release of the example step and the scenario it runs (the demo's, SERVICE=example).
type exampleRun struct {
	ns, release, fullname string
	sc                    scenario.Scenario
	job                   string // its load Job
}

// Run implements Step.
func (exampleStep) Run(ctx context.Context, env *harness.Env) (harness.Outcome, error) {
	k, err := env.Kube()
	if err != nil {
		return harness.Outcome{}, err
	}
	ps, err := openProm(ctx, env, k)
	if err != nil {
		return harness.Outcome{}, err
	}
	defer ps.stop()
	good, err := scenario.Lookup(scenario.Good)
	if err != nil {
		return harness.Outcome{}, err
	}
	misuse, err := scenario.Lookup(scenario.MisuseCap)
	if err != nil {
		return harness.Outcome{}, err
	}
	runs := []*exampleRun{
		{ns: exampleNamespace, release: exampleRelease, fullname: fullnameOf(exampleRelease), sc: good},
		{ns: exampleMisuseNamespace, release: exampleMisuseRelease, fullname: fullnameOf(exampleMisuseRelease), sc: misuse},
	}
	for _, r := range runs {
		err = kube.Poll(ctx, 3*time.Second, 4*time.Minute, "Prometheus to scrape both tracks of "+r.release, func() (bool, error) {
			return scrapedAndRuled(ctx, ps.q, r.ns, r.release)
		})
		if err != nil {
			return harness.Outcome{}, err
		}
	}
	for _, r := range runs {
		r.job, err = startLoadIn(ctx, env, k, r.ns, "example", fmt.Sprintf("http://%s:80", r.fullname), exampleLoad, exampleRPS, "-get", scenario.ExampleLoadPath)
		if err != nil {
			return harness.Outcome{}, err
		}
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return harness.Outcome{}, ctx.Err()
	case <-time.After(exampleLoad - 20*time.Second):
	}
	// The guide's command first: its exit status is the verdict. A young release can still be
	// NO DATA at the first read; it gets three more, 5 s apart.
	var out bytes.Buffer
	for attempt := 0; ; attempt++ {
		out.Reset()
		err = runAdoptBlocks(ctx, env, "kind:judge", []string{"PROMETHEUS_URL=" + ps.url}, &out)
		if err == nil || attempt == 3 || !strings.Contains(out.String(), "VERDICT: NO DATA") {
			break
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return harness.Outcome{}, err
		}
	}
	env.Print(out.String())
	if err != nil {
		return harness.Outcome{}, fmt.Errorf("example: the guide's judge command (want PASS, exit 0) after %s of load: %w", time.Since(start).Round(time.Second), err)
	}
	// Both reports through the library, for the checks and the report files.
	var o outcome[ExampleResult]
	var problems []string
	var goodReport parity.Report
	for _, r := range runs {
		res, report, err := judgeExample(ctx, env, ps.q, r)
		if err != nil {
			return o.done(), err
		}
		o.Result.Scenarios = append(o.Result.Scenarios, res)
		if !res.OK {
			problems = append(problems, fmt.Sprintf("%s: verdict %s (want %s), firing %v (want %s)", r.release, res.Verdict, r.sc.Want, res.Firing, wantAlerts(r.sc)))
		}
		if r.sc.Want == parity.Pass {
			goodReport = report
			problems = append(problems, checkExampleReport(report)...)
		}
	}
	for _, r := range runs {
		if err := k.WaitJob(ctx, r.ns, r.job, 2*time.Minute); err != nil {
			logs, _ := k.PodLogs(ctx, r.ns, "job-name="+r.job, 30)
			return o.done(), fmt.Errorf("example: load Job %s/%s did not complete: %w\n%s", r.ns, r.job, err, harness.Indent(logs))
		}
		if logs, err := k.PodLogs(ctx, r.ns, "job-name="+r.job, 0); err == nil {
			env.Logf("example: %s: load generator counts: %s", r.release, strings.Join(strings.Fields(logs), " "))
		}
	}
	if len(problems) > 0 {
		return o.done(), errors.New("example: " + strings.Join(problems, "; "))
	}
	// Free the node for the steps after this one.
	helm, err := env.Tool("helm")
	if err != nil {
		return o.done(), err
	}
	for _, r := range runs {
		if err := env.Run(ctx, "example", harness.Cmd{Name: helm, Args: []string{"uninstall", r.release, "-n", r.ns, "--kubeconfig", env.Kubeconfig, "--wait", "--timeout", "2m"}}); err != nil {
			return o.done(), fmt.Errorf("example: uninstalling %s: %w", r.release, err)
		}
	}
	o.Note = fmt.Sprintf("example %s PASS through %s's judge command (heap per request gray/stable %.2f; Redis and GC share not judged), %s FAIL with %v firing",
		exampleRelease, adoptDoc, rowValue(goodReport, catalog.HeapAllocPerRequest), exampleMisuseRelease, misuse.Alerts)
	return o.done(), nil
}

// judgeExample judges one release of the example step, writes its report under
// OutDir/parity/<release> and says whether it is what the release wants.
func judgeExample(ctx context.Context, env *harness.Env, q parity.Querier, r *exampleRun) (Scenario, parity.Report, error) {
	res := Scenario{Name: "example " + r.release + " (" + r.sc.Name + ")", Want: r.sc.Want, WantAlert: r.sc.Alerts}
	var text bytes.Buffer
	report, err := judgeParity(ctx, q, r.ns, r.release, filepath.Join(env.Cfg.OutDir, "parity", r.release), &text)
	env.Print(text.String())
	if err != nil {
		return res, report, err
	}
	res.Verdict, res.Report = report.Verdict, strings.TrimSpace(text.String())
	if res.Firing, err = firingAlerts(ctx, q, r.ns, r.release); err != nil {
		return res, report, err
	}
	res.OK = r.sc.Met(res.Verdict, res.Firing)
	return res, report, nil
}

// checkExampleReport lists what is wrong with the good example's report beyond its verdict: it
// must leave the SLIs whose series the service lacks out with a note, judge CPU per request (the
// service exposes process_cpu_seconds_total), and show pooling's allocation effect (gray at most
// half stable's heap bytes per request; the unpooled PNG encoder allocates its zlib state per
// image).
func checkExampleReport(r parity.Report) []string {
	var problems []string
	for _, id := range []catalog.ID{catalog.RedisPoolHitRatio, catalog.GCCPUShare} {
		s, _ := catalog.Default().Get(id)
		if slices.ContainsFunc(r.Rows, func(rw parity.Row) bool { return rw.ID == id }) {
			problems = append(problems, s.Name+" is judged on a service without its series")
		}
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, s.Name+": not judged") }) {
			problems = append(problems, "no note says "+s.Name+" is not judged")
		}
	}
	if !slices.ContainsFunc(r.Rows, func(rw parity.Row) bool { return rw.ID == catalog.CPUPerRequest && rw.Value != nil }) {
		problems = append(problems, "CPU per request has no value")
	}
	if v := rowValue(r, catalog.HeapAllocPerRequest); v <= 0 || v > 0.5 {
		problems = append(problems, fmt.Sprintf("heap alloc per request gray/stable %.2f, want at most 0.5", v))
	}
	return problems
}

// rowValue is the value (gray against stable) of the row of id, or 0 without one.
func rowValue(r parity.Report, id catalog.ID) float64 {
	for _, rw := range r.Rows {
		if rw.ID == id && rw.Value != nil {
			return *rw.Value
		}
	}
	return 0
}

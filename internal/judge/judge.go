// Package judge runs one parity judgement for a rollout tool that is not
// the PoolCanary controller: Flagger's webhooks and Argo Rollouts' web
// metric provider (app/cmd/poolparity-judge) and Argo Rollouts' metric
// plugin (app/cmd/poolparity-argo-plugin). A Request names the namespace,
// the label selector, the SLIs, the statistical mode, the rollout's start
// and its warm-up; Judge.Evaluate reads Prometheus through promread (the
// endpoints the admin allows, every query pinned to the request's
// namespace, as the controller pins a PoolCanary's) and judges with
// parity.Evaluate, the one evaluator. Nothing here compares values or
// decides a verdict.
//
// The request's text form (ParseParams) is shared by the three callers:
// Flagger's webhook metadata, the web provider's query parameters and the
// plugin's config are the same keys (docs/flagger.md, docs/argo-rollouts.md).
//
// Namespaces is the allow-list of the namespaces an HTTP judge answers for
// (its callers name their namespace; the plugin's is the AnalysisRun's):
// docs/security.md.
//
// # Concurrency
//
// A Judge is safe for concurrent use once built, and so are Starts and
// Namespaces.
package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/parity/render"
)

// TenantLabel is the label every query is pinned to, with the request's
// namespace as its value: the controller's TenantLabel
// (internal/controller), so that a tool's judgement reads what a
// PoolCanary in the same namespace would.
const TenantLabel = "namespace"

// DefaultTimeout bounds one judgement when Judge.Timeout is zero.
const DefaultTimeout = 20 * time.Second

// DefaultMode is the statistical mode of a request that names none: the
// count-based anytime-valid test, as a PoolCanary's default
// (v1alpha1.StatisticalDefault) and poolparity-parity's -gate counts, so
// that a Flagger or Argo Rollouts hook and the controller judge one rollout
// alike. It needs the poolparity.counts rules (the chart's
// rules.counts.enabled, on by default); without them a judgement is an
// error that says so.
const DefaultMode = parity.DefaultMode

// ErrInvalid is wrapped by every error about the request itself (a bad
// parameter, another namespace, an endpoint not allowed): the caller's
// mistake, answered without reading Prometheus.
var ErrInvalid = errors.New("invalid judge request")

// Request is one judgement asked for.
type Request struct {
	// Namespace is the rollout's; every query is pinned to it. Required.
	Namespace string
	// MatchLabels select the service's series (equality matchers); a
	// namespace label naming another namespace is refused.
	MatchLabels map[string]string
	// SLIs are the catalog's SLIs to judge; none means every SLI.
	SLIs []catalog.ID
	// Mode is the statistical mode; empty means DefaultMode.
	Mode parity.StatMode
	// Window is the threshold rules' family (e.g. "5m"); empty means the
	// catalog's.
	Window string
	// Since is the rollout's start: the anytime-valid evidence (Sequential,
	// Counts) starts there. Zero means the statistical window before the
	// judgement, valid for one reading only.
	Since time.Time
	// Warmup leaves out of the statistical samples the samples of
	// [Since, Since+Warmup): the new pods' warm-up, as the controller
	// leaves out each gray pod's.
	Warmup time.Duration
	// Prometheus names one of the allowed endpoints; empty is the default.
	Prometheus string
	// Step is the statistical step, one sample per step; zero means the
	// catalog's (1m).
	Step time.Duration
	// Sample is the rule family the test samples (e.g. "20s"); empty means
	// the catalog's (1m). A family whose range exceeds the step is an
	// invalid request (overlapping samples).
	Sample string
}

// Result is a judgement: the verdict and the parity table behind it.
type Result struct {
	// Verdict is the evaluator's: PASS, FAIL, NO DATA or ERROR.
	Verdict parity.Verdict
	// Reasons say why (the report's reasons).
	Reasons []string
	// Endpoint is the Prometheus read.
	Endpoint string
	// Since is where the sequential evidence started.
	Since time.Time
	// Report is the evaluator's report: the parity table and its tests.
	Report parity.Report
}

// ReportJSON returns the report as render.JSON writes it (NaN and
// infinities as null), compact.
func (r Result) ReportJSON() (json.RawMessage, error) {
	var b bytes.Buffer
	if err := render.JSON(&b, r.Report); err != nil {
		return nil, fmt.Errorf("writing the report: %w", err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b.Bytes()); err != nil {
		return nil, fmt.Errorf("compacting the report: %w", err)
	}
	return c.Bytes(), nil
}

// Judge judges requests against the Prometheus endpoints of Clients.
type Judge struct {
	// Clients are the allowed Prometheus endpoints (the first is the
	// default); nil refuses every request.
	Clients *promread.Clients
	// Catalog is the SLI catalog; the zero value means catalog.Default().
	Catalog catalog.Catalog
	// Timeout bounds one judgement; zero means DefaultTimeout.
	Timeout time.Duration
	// Now returns the judgement's time; nil means time.Now.
	Now func() time.Time
}

// Evaluate checks req, reads Prometheus and judges. An error wrapping
// ErrInvalid is a refused request (nothing was read). Any other error is a
// failed read, with the Result's Verdict parity.Error and its reasons.
func (j *Judge) Evaluate(ctx context.Context, req Request) (Result, error) {
	now := time.Now()
	if j.Now != nil {
		now = j.Now()
	}
	cat, opts, err := j.options(req, now)
	if err != nil {
		return Result{Verdict: parity.Error, Reasons: []string{err.Error()}}, err
	}
	q, endpoint, err := j.querier(req)
	if err != nil {
		return Result{Verdict: parity.Error, Reasons: []string{err.Error()}}, err
	}
	timeout := j.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	report, err := parity.Evaluate(ctx, q, cat, opts)
	res := Result{Verdict: report.Verdict, Reasons: report.Reasons, Endpoint: endpoint, Since: opts.StatSince, Report: report}
	if err != nil {
		return res, fmt.Errorf("judging %s against %s: %w", req.Namespace, endpoint, promread.DescribeError(err))
	}
	return res, nil
}

// options maps req to the evaluator's catalog and options.
func (j *Judge) options(req Request, now time.Time) (catalog.Catalog, parity.Options, error) {
	bad := func(format string, a ...any) (catalog.Catalog, parity.Options, error) {
		return catalog.Catalog{}, parity.Options{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	if err := CheckNamespace(req.Namespace); err != nil {
		return bad("%v", err)
	}
	if v, ok := req.MatchLabels[TenantLabel]; ok && v != req.Namespace {
		return bad("selector: %s=%q is not the request's namespace %q: a rollout reads only its own namespace's series", TenantLabel, v, req.Namespace)
	}
	selector, err := parity.Matchers(req.MatchLabels)
	if err != nil {
		return bad("selector: %v", err)
	}
	cat := j.Catalog
	if len(cat.SLIs) == 0 {
		cat = catalog.Default()
	}
	if len(req.SLIs) > 0 {
		if cat, err = cat.Select(req.SLIs...); err != nil {
			return bad("slis: %v", err)
		}
	}
	mode := req.Mode
	if mode == "" {
		mode = DefaultMode
	}
	t, err := parity.Modes().Lookup(string(mode))
	if err != nil {
		return bad("mode: %v", err)
	}
	if req.Since.After(now.Add(time.Minute)) {
		return bad("since %s is in the future: it is the rollout's start", req.Since.UTC().Format(time.RFC3339))
	}
	if req.Warmup < 0 {
		return bad("warmup %s is negative", req.Warmup)
	}
	if req.Step < 0 {
		return bad("step %s is negative", req.Step)
	}
	if err := checkSampling(cat.Stat, req.Step, req.Sample); err != nil {
		return bad("%v", err)
	}
	opts := parity.Options{
		At: now, Title: "poolparity judge: " + req.Namespace, Window: req.Window, Selector: selector, Stat: mode,
		StatStep: req.Step, SampleFamily: req.Sample,
	}
	if t.AnytimeValid() {
		opts.StatSince = req.Since
	}
	if req.Warmup > 0 && !req.Since.IsZero() {
		opts.Exclude = []parity.Interval{{From: req.Since, To: req.Since.Add(req.Warmup)}}
	}
	return cat, opts, nil
}

// checkSampling refuses a step shorter than the range of the rule family
// sampled (each given or the catalog's): the samples would overlap, and the
// test would count the same requests more than once.
func checkSampling(st catalog.Stat, step time.Duration, family string) error {
	if step <= 0 {
		step = st.Step
	}
	if family == "" {
		family = st.SampleFamily
	}
	r, err := model.ParseDuration(family)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	if time.Duration(r) > step {
		return fmt.Errorf("step %s with sample %s: samples of a %s rate taken every %s overlap and make the test overconfident; set sample to at most the step (e.g. step: 20s, sample: 20s)",
			step, family, family, step)
	}
	return nil
}

// querier returns the Querier of req's endpoint, pinned to its namespace.
func (j *Judge) querier(req Request) (parity.Querier, string, error) {
	if j.Clients == nil {
		return nil, "", fmt.Errorf("%w: no Prometheus endpoints are configured", ErrInvalid)
	}
	q, endpoint, err := j.Clients.For(req.Prometheus)
	if err != nil {
		return nil, "", fmt.Errorf("%w: prometheus: %w", ErrInvalid, err)
	}
	pq, err := promread.Pin(q, TenantLabel, req.Namespace)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return pq, endpoint, nil
}

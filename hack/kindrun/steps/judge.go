package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/parity/render"
)

// This file reads the cluster's Prometheus through client_golang's v1 API: the parity verdict
// (parity.Evaluate, in process), the firing alerts, the request split and whether both tracks
// are scraped. Every function takes a parity.Querier, so the tests give them a fake one.

// parityWindow is the recording-rule family the kind run judges: the chart's 1m rules, which
// values-test.yaml makes the alerts read too, so that a verdict takes minutes, not hours.
const parityWindow = "1m"

// chartSpan is how far back the report's charts reach (as poolparity-parity's).
const chartSpan = 15 * time.Minute

// newPromAPI returns a Prometheus client for base (the port-forwarded Prometheus): the one
// client of every reader, without proxy (the port-forward listens on loopback), bounded in
// time and size.
func newPromAPI(base string) (parity.Querier, error) {
	return promread.New(base, promread.ClientConfig{})
}

// promSession is a port-forward to the cluster's Prometheus and a client through it.
type promSession struct {
	url  string
	q    parity.Querier
	stop func()
}

// openProm forwards a loopback port to the cluster's Prometheus and returns a client through it;
// the caller stops it.
func openProm(ctx context.Context, env *harness.Env, k *kube.Kube) (promSession, error) {
	url, stop, err := portForwardProm(ctx, env, k)
	if err != nil {
		return promSession{}, err
	}
	q, err := newPromAPI(url)
	if err != nil {
		stop()
		return promSession{}, err
	}
	return promSession{url: url, q: q, stop: stop}, nil
}

// releaseSelector is the label matchers of one release's series.
func releaseSelector(namespace, release string) string {
	return fmt.Sprintf(`namespace=%q,job=%q`, namespace, release)
}

// parityOptions are the evaluation's options: what `poolparity-parity -window 1m -gate confirmed
// -selector namespace=...,job=...` uses (the alerts; the pools). The gate is the windowed one, not
// the CLI's default (counts): the steps read each release once, after a load of a few minutes,
// shorter than the count-based test needs at parity; the canary step judges on Counts.
func parityOptions(namespace, release string, at time.Time) parity.Options {
	return parity.Options{
		At: at, Title: "poolparity on kind: gray vs stable",
		Window: parityWindow, Selector: releaseSelector(namespace, release),
		Stat: parity.GateConfirmed.Mode(), Alerts: true, Pools: true,
	}
}

// judgeParity evaluates the release's parity from q, prints the report to out and writes its
// files (text, JSON, HTML) into dir. A report whose verdict is ERROR comes back with the error.
func judgeParity(ctx context.Context, q parity.Querier, namespace, release, dir string, out io.Writer) (parity.Report, error) {
	cat := catalog.Default()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	now := time.Now()
	o := parityOptions(namespace, release, now)
	r, err := parity.Evaluate(ctx, q, cat, o)
	if err != nil {
		return r, fmt.Errorf("evaluating parity (window %s, selector %s): %w", o.Window, o.Selector, err)
	}
	step := (chartSpan / 150).Round(time.Second)
	if r.Charts, err = parity.Charts(ctx, q, cat, o.Window, o.Selector, now.Add(-chartSpan), now, step); err != nil {
		return r, fmt.Errorf("reading the report's charts: %w", err)
	}
	r.Context = []parity.KV{{Key: "selector", Value: o.Selector}, {Key: "charts", Value: fmt.Sprintf("the last %.0f minutes", chartSpan.Minutes())}}
	if err := render.Text(out, r); err != nil {
		return r, fmt.Errorf("printing the parity report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, fmt.Errorf("creating %s: %w", dir, err)
	}
	if _, err := render.Files(r, dir); err != nil {
		return r, fmt.Errorf("writing the parity report to %s: %w", dir, err)
	}
	return r, nil
}

// firingAlerts lists the poolparity alerts of the release (or of no release in particular)
// firing in Prometheus, each name once, sorted. The cluster's Prometheus watches the example
// service's release too, whose alerts are its own.
func firingAlerts(ctx context.Context, q parity.Querier, namespace, release string) ([]string, error) {
	alerts, err := promread.Alerts(ctx, q, "")
	if err != nil {
		return nil, fmt.Errorf("reading the alerts: %w", err)
	}
	alerts = parity.SelectAlerts(alerts, []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, "namespace", namespace), labels.MustNewMatcher(labels.MatchEqual, "job", release),
	})
	firing := []string{}
	for _, a := range alerts {
		if a.State == string(v1.AlertStateFiring) && strings.HasPrefix(a.Name, "PoolParity") && !slices.Contains(firing, a.Name) {
			firing = append(firing, a.Name)
		}
	}
	slices.Sort(firing)
	return firing, nil
}

// vector runs an instant query that must return a vector.
func vector(ctx context.Context, q parity.Querier, expr string, at time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return promread.Vector(ctx, q, expr, at)
}

// errNoRequests is returned by requestRates before either track has served a request.
var errNoRequests = errors.New("no request rate yet")

// requestRates returns the release's API request rate per second over the last minute: the
// gray track's and both tracks' (probes and scrapes left out).
func requestRates(ctx context.Context, q parity.Querier, namespace, release string, at time.Time) (gray, total float64, err error) {
	expr := fmt.Sprintf(`sum by (gray_status) (rate(http_requests_total{%s,route!~".*(healthz|readyz|metrics).*"}[1m]))`, releaseSelector(namespace, release))
	v, err := vector(ctx, q, expr, at)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range v {
		total += float64(s.Value)
		if s.Metric[instrument.LabelGrayStatus] == instrument.GrayStatusGray {
			gray += float64(s.Value)
		}
	}
	if total == 0 {
		return 0, 0, errNoRequests
	}
	return gray, total, nil
}

// scrapedAndRuled reports whether Prometheus has series of both tracks of the release and has
// loaded rules.
func scrapedAndRuled(ctx context.Context, q parity.Querier, namespace, release string) (bool, error) {
	// up has only the target's labels; the process series carries the service's gray_status (both
	// the reference and the example service expose it).
	expr := fmt.Sprintf(`count by (gray_status) (process_cpu_seconds_total{%s})`, releaseSelector(namespace, release))
	v, err := vector(ctx, q, expr, time.Now())
	if err != nil || len(v) < 2 {
		return false, err
	}
	rules, err := q.Rules(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("reading the rules: %w", err)
	}
	return len(rules.Groups) > 0, nil
}

// judgeReading is what the chart's judge would answer now to a hook whose metadata is meta, for
// namespace ns, with its evidence taken from since: the harness parses the metadata and judges
// in process (internal/judge), reading the cluster's Prometheus at promBase (its port-forward).
// The judge takes its own start from its first call for the revision (30-45 s after the
// Flagger step's trigger in kind runs), and every 20 s sample moves with the start: give it the
// judge's start to read what the judge read (flaggerReading takes it from the judge's log).
func judgeReading(ctx context.Context, promBase, ns string, meta map[string]string, since time.Time) (judge.Result, error) {
	req, err := judge.ParseParams(ns, meta)
	if err != nil {
		return judge.Result{}, err
	}
	req.Since = since
	clients, err := promread.NewClients([]string{promBase}, false, promread.ClientConfig{})
	if err != nil {
		return judge.Result{}, err
	}
	j := judge.Judge{Clients: clients}
	return j.Evaluate(ctx, req)
}

// readingLine is a judgement in one line: the verdict, then each row's values, comparison and
// statistical test, then the reasons.
func readingLine(res judge.Result) string {
	var b strings.Builder
	b.WriteString(string(res.Verdict))
	for _, r := range res.Report.Rows {
		c := render.Cells(r)
		fmt.Fprintf(&b, "; %s: stable %s, gray %s, %s, test %s", c.SLI, c.Stable, c.Gray, c.Compared, c.Test)
	}
	if len(res.Reasons) > 0 {
		b.WriteString("; reasons: " + strings.Join(res.Reasons, "; "))
	}
	return b.String()
}

// Package argoplugin is poolparity's Argo Rollouts metric provider plugin:
// each measurement is one judgement (internal/judge, so parity.Evaluate
// with the catalog) of the AnalysisRun's namespace, from the rollout's
// start. It implements Argo's plugin RPC interface
// (metricproviders/plugin/rpc.MetricProviderPlugin); the binary
// app/cmd/poolparity-argo-plugin serves it through hashicorp/go-plugin with
// Argo's handshake (Handshake).
//
// The metric's plugin config, under the key Name, is a JSON object of
// strings with judge.ParseParams' keys (selector, slis, mode, window,
// since, warmup, step, sample, prometheus). A measurement's phase is the
// verdict's: PASS Successful, FAIL Failed, NO DATA Inconclusive, ERROR
// Error; its value is the verdict and its metadata carry the reasons and
// the parity table (docs/argo-rollouts.md).
//
// # Tenancy
//
// The plugin runs inside Argo's controller, for every namespace's
// AnalysisRuns; a metric's config is written by the tenant. So the
// namespace is always the AnalysisRun's: the config has no namespace key
// (an unknown key is refused), a selector naming another namespace is
// refused by the judge, and every query is pinned to the run's namespace
// (docs/security.md).
//
// # Concurrency
//
// A Plugin is safe for concurrent use: go-plugin's RPC server may call it
// from several goroutines.
package argoplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	goplugin "github.com/hashicorp/go-plugin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/judgehttp"
	"github.com/poolparity/poolparity/internal/parity"
)

// Name is the plugin's name: the key of its config in a metric's
// provider.plugin and the name in argo-rollouts-config's
// metricProviderPlugins.
const Name = "poolparity/judge"

// ProviderType is what Type returns: Argo's type of every RPC metric
// plugin (metricproviders/plugin.ProviderType).
const ProviderType = "RPCPlugin"

// PluginKey is the key Argo dispenses the metric plugin under.
const PluginKey = "RpcMetricProviderPlugin"

// Handshake is Argo Rollouts' handshake for metric provider plugins.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "ARGO_ROLLOUTS_RPC_PLUGIN",
	MagicCookieValue: "metricprovider",
}

// MaxTableBytes bounds the parity table kept in a measurement's metadata
// (the AnalysisRun's status holds every measurement kept): a larger one
// keeps the rows without their tests.
const MaxTableBytes = 16 << 10

// The metadata keys of a measurement.
const (
	MetaVerdict = "verdict"
	MetaReasons = "reasons"
	MetaSince   = "since"
	MetaTable   = "table"
)

// Plugin judges measurements.
type Plugin struct {
	// Judge reads Prometheus and judges.
	Judge *judge.Judge
	// Log receives one line per measurement; nil logs nothing.
	Log *slog.Logger
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

func (p *Plugin) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// InitPlugin checks the plugin has a judge.
func (p *Plugin) InitPlugin() types.RpcError {
	if p.Judge == nil || p.Judge.Clients == nil {
		return types.RpcError{ErrorString: "poolparity/judge: no Prometheus endpoints configured"}
	}
	return types.RpcError{}
}

// Request returns the judgement a metric of run asks for: its plugin
// config, the run's namespace, and the run's start (its status'
// startedAt, else its creation) when the config gives no since.
func Request(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric) (judge.Request, error) {
	if run == nil {
		return judge.Request{}, fmt.Errorf("%w: no AnalysisRun", judge.ErrInvalid)
	}
	params := map[string]string{}
	if raw, ok := metric.Provider.Plugin[Name]; ok && len(raw) > 0 && string(raw) != "null" {
		if len(raw) > 64<<10 {
			return judge.Request{}, fmt.Errorf("%w: the plugin config is larger than 64 KiB", judge.ErrInvalid)
		}
		if err := json.Unmarshal(raw, &params); err != nil {
			return judge.Request{}, fmt.Errorf("%w: provider.plugin[%q]: want a JSON object of strings: %v", judge.ErrInvalid, Name, err)
		}
	}
	req, err := judge.ParseParams(run.Namespace, params)
	if err != nil {
		return judge.Request{}, fmt.Errorf("provider.plugin[%q]: %w", Name, err)
	}
	if req.Since.IsZero() {
		switch {
		case run.Status.StartedAt != nil:
			req.Since = run.Status.StartedAt.Time
		default:
			req.Since = run.CreationTimestamp.Time
		}
	}
	return req, nil
}

// Run takes one measurement: it judges and returns the verdict as the
// measurement's phase, finished.
func (p *Plugin) Run(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric) v1alpha1.Measurement {
	started := metav1.NewTime(p.now())
	m := v1alpha1.Measurement{StartedAt: &started}
	finish := func(phase v1alpha1.AnalysisPhase, msg string) v1alpha1.Measurement {
		done := metav1.NewTime(p.now())
		m.Phase, m.Message, m.FinishedAt = phase, msg, &done
		return m
	}
	req, err := Request(run, metric)
	if err != nil {
		return finish(v1alpha1.AnalysisPhaseError, err.Error())
	}
	if p.Judge == nil {
		return finish(v1alpha1.AnalysisPhaseError, "poolparity/judge: no Prometheus endpoints configured")
	}
	res, err := p.Judge.Evaluate(context.Background(), req)
	if errors.Is(err, judge.ErrInvalid) {
		return finish(v1alpha1.AnalysisPhaseError, err.Error())
	}
	m.Value = string(res.Verdict)
	m.Metadata = map[string]string{MetaVerdict: string(res.Verdict), MetaReasons: strings.Join(res.Reasons, "; ")}
	if !res.Since.IsZero() {
		m.Metadata[MetaSince] = res.Since.UTC().Format(time.RFC3339)
	}
	if p.Log != nil {
		p.Log.Info("measured", "namespace", run.Namespace, "analysisrun", run.Name, "metric", metric.Name, "verdict", res.Verdict, "since", res.Since, "reasons", m.Metadata[MetaReasons])
	}
	if err != nil {
		return finish(v1alpha1.AnalysisPhaseError, err.Error())
	}
	m.Metadata[MetaTable] = table(res)
	return finish(v1alpha1.AnalysisPhase(judgehttp.Phase(res.Verdict)), strings.Join(res.Reasons, "; "))
}

// table is the parity table of res as JSON, within MaxTableBytes.
func table(res judge.Result) string {
	r := res.Report
	r.Charts, r.Profiles, r.Differential = nil, nil, nil
	b, err := judge.Result{Report: r}.ReportJSON()
	if err == nil && len(b) <= MaxTableBytes {
		return string(b)
	}
	rows := make([]parity.Row, len(r.Rows))
	for i, row := range r.Rows {
		row.Test = nil
		rows[i] = row
	}
	r.Rows = rows
	r.Notes = append(r.Notes, "the statistical tests are left out of this table to keep it small")
	if b, err = (judge.Result{Report: r}).ReportJSON(); err != nil {
		return fmt.Sprintf(`{"error":%q}`, err.Error())
	}
	if len(b) > MaxTableBytes {
		return `{"error":"the parity table is larger than the metadata allows"}`
	}
	return string(b)
}

// Resume returns the measurement: Run finishes every measurement.
func (p *Plugin) Resume(_ *v1alpha1.AnalysisRun, _ v1alpha1.Metric, m v1alpha1.Measurement) v1alpha1.Measurement {
	return m
}

// Terminate returns the measurement: nothing runs between calls.
func (p *Plugin) Terminate(_ *v1alpha1.AnalysisRun, _ v1alpha1.Metric, m v1alpha1.Measurement) v1alpha1.Measurement {
	return m
}

// GarbageCollect has nothing to collect.
func (p *Plugin) GarbageCollect(*v1alpha1.AnalysisRun, v1alpha1.Metric, int) types.RpcError {
	return types.RpcError{}
}

// Type returns ProviderType.
func (p *Plugin) Type() string { return ProviderType }

// GetMetadata returns the metric's plugin config as Argo shows it with the
// metric's result: its parameters, or why they do not parse.
func (p *Plugin) GetMetadata(metric v1alpha1.Metric) map[string]string {
	raw, ok := metric.Provider.Plugin[Name]
	if !ok {
		return nil
	}
	if len(raw) > 4096 {
		raw = raw[:4096]
	}
	return map[string]string{"config": string(raw)}
}

// Package render produces the deployment files that this repository generates from other
// sources, and the renderings its golden files hold:
//   - the chart's copies of the Grafana dashboards (Helm cannot read files outside the chart),
//   - the kustomize base and components, which are the chart's own rendering,
//   - `helm template` of each value set and `kustomize build` of each overlay, with the dashboard
//     ConfigMaps left out (their data is dashboards/*.json, compared with the source instead).
//
// hack/gen writes these files and the tests under deploy/ compare the committed files with the
// same functions' output, so generation and check cannot disagree. The functions run the helm
// and kustomize binaries they are given and never look for tools themselves.
package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// KubeVersion is the Kubernetes version the chart is rendered and linted for; it matches the
// kube-apiserver the envtest harness runs.
const KubeVersion = "1.37.0"

// Release and Namespace are the release name and namespace every golden rendering uses.
const (
	Release   = "poolparity"
	Namespace = "poolparity"
)

// ValueSet is a named list of values files, relative to the chart directory.
type ValueSet struct {
	Name  string
	Files []string
}

// ValueSets are the value sets the chart is linted, rendered and applied with.
var ValueSets = []ValueSet{
	{Name: "default"},
	{Name: "kind", Files: []string{"values-kind.yaml"}},
	{Name: "staging", Files: []string{"values-staging.yaml"}},
	{Name: "everything", Files: []string{"ci/everything-values.yaml"}},
	{Name: "no-hpa", Files: []string{"ci/no-hpa-values.yaml"}},
	{Name: "keda", Files: []string{"ci/keda-values.yaml"}},
	{Name: "controller", Files: []string{"ci/controller-values.yaml"}},
	{Name: "controller-namespaced", Files: []string{"ci/controller-namespaced-values.yaml"}},
}

// Overlays are the kustomize overlays under deploy/kustomize/overlays.
var Overlays = []string{"kind", "staging"}

// Paths relative to the repository root.
const (
	// ChartPath is the chart's directory.
	ChartPath = "deploy/helm/poolparity"
	// DashboardsPath holds the Grafana dashboards, the source of every copy.
	DashboardsPath = "dashboards"
	// ChartDashboardsPath holds the chart's copies of the dashboards.
	ChartDashboardsPath = ChartPath + "/files/dashboards"
	// KustomizePath is the kustomize tree.
	KustomizePath = "deploy/kustomize"
	// GoldenPath holds the golden renderings, helm/<value set>.yaml and kustomize/<overlay>.yaml.
	GoldenPath = "deploy/testdata"
)

// GeneratedPaths are the directories (relative to the repository root) whose files Generate
// writes; everything in them besides the hand-kept kustomize overlays and component
// kustomization.yaml files is generated.
var GeneratedPaths = []string{ChartDashboardsPath, KustomizePath, GoldenPath}

// Tools are the paths of the binaries the renderings run (the repository's ./bin/helm and
// ./bin/kustomize for hack/gen).
type Tools struct {
	Helm      string
	Kustomize string
}

// File is one generated file: its path relative to the repository root, and its content.
type File struct {
	Path string
	Data []byte
}

// Run runs a command in dir and returns its stdout; on failure the error carries stderr.
func Run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// HelmTemplateArgs returns the `helm template` arguments for a value set plus extra arguments.
func HelmTemplateArgs(chartDir string, vs ValueSet, extra ...string) []string {
	args := []string{"template", Release, chartDir, "--namespace", Namespace, "--kube-version", KubeVersion}
	for _, f := range vs.Files {
		args = append(args, "-f", filepath.Join(chartDir, f))
	}
	return append(args, extra...)
}

// HelmTemplate renders the chart under root with a value set (test hooks included).
func HelmTemplate(ctx context.Context, root, helm string, vs ValueSet, extra ...string) ([]byte, error) {
	out, err := Run(ctx, "", helm, HelmTemplateArgs(filepath.Join(root, ChartPath), vs, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("rendering value set %q: %w", vs.Name, err)
	}
	return out, nil
}

// KustomizeBuild builds deploy/kustomize/<path> under root.
func KustomizeBuild(ctx context.Context, root, kustomize, path string) ([]byte, error) {
	out, err := Run(ctx, "", kustomize, "build", filepath.Join(root, KustomizePath, path))
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", path, err)
	}
	return out, nil
}

// Dashboards returns the source dashboards, dashboards/*.json, by file name.
func Dashboards(root string) (map[string][]byte, error) {
	paths, err := filepath.Glob(filepath.Join(root, DashboardsPath, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no dashboards in %s", filepath.Join(root, DashboardsPath))
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading dashboard: %w", err)
		}
		out[filepath.Base(p)] = data
	}
	return out, nil
}

// ChartDashboards returns the chart's copies of the dashboards: byte-for-byte the source.
func ChartDashboards(root string) ([]File, error) {
	src, err := Dashboards(root)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, name := range sortedKeys(src) {
		out = append(out, File{Path: ChartDashboardsPath + "/" + name, Data: src[name]})
	}
	return out, nil
}

// StaleChartDashboards returns the files in the chart's dashboard directory that have no source.
func StaleChartDashboards(root string) ([]string, error) {
	src, err := Dashboards(root)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(root, ChartDashboardsPath))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var stale []string
	for _, e := range entries {
		if _, ok := src[e.Name()]; !ok {
			stale = append(stale, ChartDashboardsPath+"/"+e.Name())
		}
	}
	return stale, nil
}

// KustomizeRedisSecret is the Secret (key redis-password) holding the Redis password of the kustomize
// redis component; the overlay that uses the component provides it.
const KustomizeRedisSecret = "poolparity-redis"

// generatedHeader starts every kustomize file rendered from the chart.
const generatedHeader = "# Code generated from deploy/helm/poolparity by `make generate` (hack/gen). DO NOT EDIT.\n"

// Kustomize renders the chart into the kustomize files generated from it: the core objects with
// default values but no Redis (base), and the monitoring and Redis objects (components). It reads
// the chart's dashboard copies, so write ChartDashboards first.
func Kustomize(ctx context.Context, root string, tools Tools) ([]File, error) {
	// The base carries no REDIS_ADDR: each overlay chooses its Redis (the redis component or
	// an env patch). redis.embedded is the chart's value for "no REDIS_ADDR".
	base, err := HelmTemplate(ctx, root, tools.Helm, ValueSet{Name: "kustomize-base"}, "--skip-tests",
		"--set", "redis.enabled=false,redis.embedded=true")
	if err != nil {
		return nil, err
	}
	// The Redis component names its password Secret instead of carrying one: a generated Secret
	// would hold a new password at every render, and a committed one a password everybody knows.
	// Each overlay that uses the component provides the Secret (overlays/kind generates one).
	full, err := HelmTemplate(ctx, root, tools.Helm, ValueSet{Name: "kustomize-components"}, "--skip-tests",
		"--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,dashboards.enabled=true,redis.enabled=true",
		"--set", "redis.auth.existingSecret="+KustomizeRedisSecret)
	if err != nil {
		return nil, err
	}
	docs, err := decodeDocs(full)
	if err != nil {
		return nil, err
	}
	var monitoring, redis bytes.Buffer
	monitoring.WriteString(generatedHeader)
	redis.WriteString(generatedHeader)
	for _, d := range docs {
		if d.obj == nil {
			continue
		}
		var w *bytes.Buffer
		switch {
		case d.obj.Kind == "ServiceMonitor", d.obj.Kind == "PrometheusRule",
			d.obj.Kind == "ConfigMap" && d.obj.Metadata.Labels["grafana_dashboard"] != "":
			w = &monitoring
		case d.obj.Metadata.Labels["app.kubernetes.io/component"] == "redis":
			w = &redis
		default:
			continue
		}
		y, err := yaml.Marshal(d.raw)
		if err != nil {
			return nil, fmt.Errorf("marshalling %s %s: %w", d.obj.Kind, d.obj.Metadata.Name, err)
		}
		w.WriteString("---\n")
		w.Write(y)
	}
	return []File{
		{Path: KustomizePath + "/base/poolparity.yaml", Data: append([]byte(generatedHeader), base...)},
		{Path: KustomizePath + "/components/monitoring/monitoring.yaml", Data: monitoring.Bytes()},
		{Path: KustomizePath + "/components/redis/redis.yaml", Data: redis.Bytes()},
	}, nil
}

// HelmGolden is the golden rendering of a value set: `helm template` without the dashboard
// ConfigMaps.
func HelmGolden(ctx context.Context, root, helm string, vs ValueSet) (File, error) {
	out, err := HelmTemplate(ctx, root, helm, vs)
	if err != nil {
		return File{}, err
	}
	out, err = withoutDashboards(root, out)
	if err != nil {
		return File{}, fmt.Errorf("value set %q: %w", vs.Name, err)
	}
	out, err = maskGeneratedPasswords(out)
	if err != nil {
		return File{}, fmt.Errorf("value set %q: %w", vs.Name, err)
	}
	return File{Path: GoldenPath + "/helm/" + vs.Name + ".yaml", Data: out}, nil
}

// GeneratedPasswordMask stands in a golden rendering for the password of the chart's generated
// Redis Secret, which is random at every render without a cluster to look it up in.
const GeneratedPasswordMask = `"(random at install, kept on upgrade)"`

// generatedPasswordLine is the data line of the chart's generated Redis Secret (templates/redis.yaml).
var generatedPasswordLine = regexp.MustCompile(`(?m)^(  redis-password: )"[A-Za-z0-9+/=]+"$`)

// maskGeneratedPasswords replaces the password of each Redis Secret of a rendering (a Secret with
// component redis) by GeneratedPasswordMask, and keeps every other document byte for byte.
func maskGeneratedPasswords(manifests []byte) ([]byte, error) {
	docs, err := decodeDocs(manifests)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, d := range docs {
		text := d.text
		if d.obj != nil && d.obj.Kind == "Secret" && d.obj.Metadata.Labels["app.kubernetes.io/component"] == "redis" {
			if !generatedPasswordLine.Match(text) {
				return nil, fmt.Errorf("the Secret %s has no redis-password line to mask", d.obj.Metadata.Name)
			}
			text = generatedPasswordLine.ReplaceAll(text, []byte("${1}"+GeneratedPasswordMask))
		}
		b.Write(text)
	}
	return b.Bytes(), nil
}

// KustomizeGolden is the golden rendering of an overlay: `kustomize build` without the dashboard
// ConfigMaps. It reads the generated kustomize files, so write Kustomize first.
func KustomizeGolden(ctx context.Context, root, kustomize, overlay string) (File, error) {
	out, err := KustomizeBuild(ctx, root, kustomize, filepath.Join("overlays", overlay))
	if err != nil {
		return File{}, err
	}
	out, err = withoutDashboards(root, out)
	if err != nil {
		return File{}, fmt.Errorf("overlay %q: %w", overlay, err)
	}
	return File{Path: GoldenPath + "/kustomize/" + overlay + ".yaml", Data: out}, nil
}

// Generate writes every generated file under root in the order their inputs need (dashboard
// copies, kustomize files, golden renderings) and removes dashboard copies without a source.
// It returns the paths it wrote or removed.
func Generate(ctx context.Context, root string, tools Tools) ([]string, error) {
	var done []string
	write := func(files ...File) error {
		for _, f := range files {
			p := filepath.Join(root, f.Path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				return fmt.Errorf("writing generated file: %w", err)
			}
			done = append(done, f.Path)
		}
		return nil
	}
	dash, err := ChartDashboards(root)
	if err != nil {
		return done, err
	}
	if err := write(dash...); err != nil {
		return done, err
	}
	stale, err := StaleChartDashboards(root)
	if err != nil {
		return done, err
	}
	for _, s := range stale {
		if err := os.Remove(filepath.Join(root, s)); err != nil {
			return done, fmt.Errorf("removing a dashboard copy without a source: %w", err)
		}
		done = append(done, s)
	}
	kust, err := Kustomize(ctx, root, tools)
	if err != nil {
		return done, err
	}
	if err := write(kust...); err != nil {
		return done, err
	}
	for _, vs := range ValueSets {
		f, err := HelmGolden(ctx, root, tools.Helm, vs)
		if err != nil {
			return done, err
		}
		if err := write(f); err != nil {
			return done, err
		}
	}
	for _, o := range Overlays {
		f, err := KustomizeGolden(ctx, root, tools.Kustomize, o)
		if err != nil {
			return done, err
		}
		if err := write(f); err != nil {
			return done, err
		}
	}
	return done, nil
}

// object is the part of a manifest the renderings look at.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

// doc is one document of a YAML stream: its text (with the "---" line that opens it, if any),
// and, unless it holds no object, the object decoded twice (the fields above, and all of it).
type doc struct {
	text []byte
	obj  *object
	raw  map[string]any
}

// decodeDocs splits a YAML stream into its documents at the "---" lines, keeping each text as is.
func decodeDocs(stream []byte) ([]doc, error) {
	var docs []doc
	var cur []byte
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		d := doc{text: cur}
		cur = nil
		var raw map[string]any
		if err := yaml.Unmarshal(d.text, &raw); err != nil {
			return fmt.Errorf("decoding a manifest: %w", err)
		}
		if len(raw) > 0 {
			var o object
			if err := yaml.Unmarshal(d.text, &o); err != nil {
				return fmt.Errorf("decoding a manifest: %w", err)
			}
			d.obj, d.raw = &o, raw
		}
		docs = append(docs, d)
		return nil
	}
	for line := range bytes.Lines(stream) {
		if string(bytes.TrimRight(line, "\r\n")) == "---" {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		cur = append(cur, line...)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// DashboardConfigMaps returns, for each ConfigMap of a rendering that holds a dashboard of
// dashboards/ (a data key named like a source file), its name and its data by key.
func DashboardConfigMaps(root string, manifests []byte) (map[string]map[string]string, error) {
	dash, _, err := splitDashboards(root, manifests)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	for _, d := range dash {
		out[d.obj.Metadata.Name] = d.obj.Data
	}
	return out, nil
}

// withoutDashboards drops the dashboard ConfigMaps from a rendering and keeps every other
// document byte for byte.
func withoutDashboards(root string, manifests []byte) ([]byte, error) {
	_, rest, err := splitDashboards(root, manifests)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, d := range rest {
		b.Write(d.text)
	}
	return b.Bytes(), nil
}

// splitDashboards splits a rendering into the ConfigMaps holding a dashboard of dashboards/ (a
// data key named like a source file) and the other documents, in order.
func splitDashboards(root string, manifests []byte) (dash, rest []doc, err error) {
	src, err := Dashboards(root)
	if err != nil {
		return nil, nil, err
	}
	docs, err := decodeDocs(manifests)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range docs {
		if isDashboardConfigMap(d.obj, src) {
			dash = append(dash, d)
		} else {
			rest = append(rest, d)
		}
	}
	return dash, rest, nil
}

func isDashboardConfigMap(o *object, src map[string][]byte) bool {
	if o == nil || o.Kind != "ConfigMap" {
		return false
	}
	for k := range o.Data {
		if _, ok := src[k]; ok {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

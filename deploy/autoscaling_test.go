package deploy_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/catalog"
)

// trackAutoscaler is what scales one track in a rendering: the chart's HPA or a KEDA ScaledObject.
type trackAutoscaler struct {
	kind     string // HorizontalPodAutoscaler or ScaledObject
	min, max int64
	obj      *unstructured.Unstructured
}

// autoscalers returns each track's HPA or ScaledObject, by the track label; a track with both
// fails the test.
func autoscalers(t *testing.T, objs []*unstructured.Unstructured) map[string]trackAutoscaler {
	t.Helper()
	out := map[string]trackAutoscaler{}
	for _, o := range objs {
		var minPath, maxPath string
		switch o.GetKind() {
		case "HorizontalPodAutoscaler":
			minPath, maxPath = "minReplicas", "maxReplicas"
		case "ScaledObject":
			minPath, maxPath = "minReplicaCount", "maxReplicaCount"
		default:
			continue
		}
		track := o.GetLabels()["poolparity.dev/track"]
		if prev, dup := out[track]; dup {
			t.Fatalf("track %s has a %s and a %s", track, prev.kind, o.GetKind())
		}
		out[track] = trackAutoscaler{kind: o.GetKind(), min: number(t, o, "spec", minPath), max: number(t, o, "spec", maxPath), obj: o}
	}
	return out
}

// number reads a whole number of a decoded object (JSON numbers may decode as int64 or float64).
func number(t *testing.T, o *unstructured.Unstructured, path ...string) int64 {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s %s: no %s (%v)", o.GetKind(), o.GetName(), strings.Join(path, "."), err)
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	t.Fatalf("%s %s: %s is %T, want a number", o.GetKind(), o.GetName(), strings.Join(path, "."), v)
	return 0
}

// triggers returns a ScaledObject's triggers by type.
func triggers(t *testing.T, so *unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	list, _, err := unstructured.NestedSlice(so.Object, "spec", "triggers")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, tr := range list {
		m := tr.(map[string]any)
		out[m["type"].(string)] = m
	}
	return out
}

// latencyQuery is the parity catalog's per-track p95 query for the test release's track.
func latencyQuery(t *testing.T, window, grayStatus string) string {
	t.Helper()
	sli, ok := catalog.Default().Get(catalog.LatencyP95)
	if !ok {
		t.Fatal("the catalog has no latency-p95 SLI")
	}
	return sli.TrackQuery(window, fmt.Sprintf("job=%q,namespace=%q,gray_status=%q", render.Release, render.Namespace, grayStatus))
}

// TestAutoscalingMode renders autoscaling.mode hpa and keda, for both tracks and per track: with
// keda, a ScaledObject replaces the track's HPA, with the HPA's bounds and CPU target and a
// prometheus trigger on the catalog's p95 rule of that track alone.
func TestAutoscalingMode(t *testing.T) {
	const prom = "http://prometheus-operated.monitoring.svc:9090"
	type want struct {
		kind      string
		min, max  int64
		threshold string // the latency trigger's threshold (ScaledObject only)
		window    string
	}
	cases := []struct {
		name   string
		set    string
		tracks map[string]want
	}{
		{"the default mode renders the chart's HPAs and no ScaledObject", "",
			map[string]want{
				"stable": {kind: "HorizontalPodAutoscaler", min: 2, max: 6},
				"gray":   {kind: "HorizontalPodAutoscaler", min: 2, max: 6},
			}},
		{"mode hpa set explicitly renders the same HPAs", "autoscaling.mode=hpa",
			map[string]want{
				"stable": {kind: "HorizontalPodAutoscaler", min: 2, max: 6},
				"gray":   {kind: "HorizontalPodAutoscaler", min: 2, max: 6},
			}},
		{"mode keda renders one ScaledObject per track and no HPA",
			"autoscaling.mode=keda,autoscaling.keda.serverAddress=" + prom,
			map[string]want{
				"stable": {kind: "ScaledObject", min: 2, max: 6, threshold: "0.5", window: "1m"},
				"gray":   {kind: "ScaledObject", min: 2, max: 6, threshold: "0.5", window: "1m"},
			}},
		{"keda on the gray track only, with its own bounds, threshold and the 5m rules",
			"tracks.gray.autoscaling.mode=keda,autoscaling.keda.serverAddress=" + prom +
				",tracks.gray.autoscaling.minReplicas=1,tracks.gray.autoscaling.maxReplicas=5,tracks.gray.autoscaling.keda.latencyThreshold=0.25,tracks.gray.autoscaling.keda.window=5m",
			map[string]want{
				"stable": {kind: "HorizontalPodAutoscaler", min: 2, max: 6},
				"gray":   {kind: "ScaledObject", min: 1, max: 5, threshold: "0.25", window: "5m"},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, _ := renderObjects(t, tc.set, "")
			got := autoscalers(t, objs)
			if len(got) != len(tc.tracks) {
				t.Fatalf("%d tracks have an autoscaler, want %d", len(got), len(tc.tracks))
			}
			if err := deploytest.CheckTracks(objs); err != nil {
				t.Errorf("track contract broken:\n%v", err)
			}
			if err := deploytest.CheckNoReplicasUnderHPA(objs); err != nil {
				t.Error(err)
			}
			for track, w := range tc.tracks {
				a := got[track]
				if a.kind != w.kind || a.min != w.min || a.max != w.max {
					t.Errorf("%s: %s %d-%d, want %s %d-%d", track, a.kind, a.min, a.max, w.kind, w.min, w.max)
				}
				if a.kind != "ScaledObject" {
					continue
				}
				if name, _, _ := unstructured.NestedString(a.obj.Object, "spec", "scaleTargetRef", "name"); name != render.Release+"-"+track {
					t.Errorf("%s: the ScaledObject targets %q, want the track's Deployment %s-%s", track, name, render.Release, track)
				}
				trs := triggers(t, a.obj)
				if len(trs) != 2 {
					t.Errorf("%s: triggers %v, want cpu and prometheus", track, reflect.ValueOf(trs).MapKeys())
				}
				cpu := trs["cpu"]
				if cpu["metricType"] != "Utilization" || cpu["metadata"].(map[string]any)["value"] != "60" {
					t.Errorf("%s: cpu trigger %v, want Utilization at the chart's 60%%", track, cpu)
				}
				p := trs["prometheus"]
				if p == nil {
					t.Fatalf("%s: no prometheus trigger", track)
				}
				gs := map[string]string{"stable": "false", "gray": "true"}[track]
				md := p["metadata"].(map[string]any)
				wantMD := map[string]any{
					"serverAddress":    prom,
					"query":            latencyQuery(t, w.window, gs),
					"threshold":        w.threshold,
					"ignoreNullValues": "true",
				}
				if !reflect.DeepEqual(md, wantMD) {
					t.Errorf("%s: prometheus trigger metadata\n got %v\nwant %v", track, md, wantMD)
				}
				if p["metricType"] != "Value" {
					t.Errorf("%s: prometheus trigger metricType %v, want Value (replicas x p95 / threshold)", track, p["metricType"])
				}
			}
		})
	}
}

// TestKEDABehaviorIsTheHPABehavior checks that autoscaling.behavior reaches the HPA that KEDA makes.
func TestKEDABehaviorIsTheHPABehavior(t *testing.T) {
	objs, _ := renderObjects(t, "autoscaling.mode=keda,autoscaling.keda.serverAddress=http://p:9090,autoscaling.behavior.scaleDown.stabilizationWindowSeconds=120", "")
	for track, a := range autoscalers(t, objs) {
		if got := number(t, a.obj, "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"); got != 120 {
			t.Errorf("%s: advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds = %d, want 120", track, got)
		}
	}
}

// TestAutoscalingModeRefusesBadValues: the values that would scale a track by accident, or query
// nothing, fail the render with one line that names the setting.
func TestAutoscalingModeRefusesBadValues(t *testing.T) {
	const keda = "autoscaling.mode=keda,autoscaling.keda.serverAddress=http://p:9090"
	cases := []struct {
		name, set string
		want      []string // substrings of helm's error
	}{
		{"keda without a Prometheus to query", "autoscaling.mode=keda", []string{"tracks.stable.autoscaling.mode=keda needs autoscaling.keda.serverAddress"}},
		{"keda on one track without a Prometheus", "tracks.gray.autoscaling.mode=keda", []string{"tracks.gray.autoscaling.mode=keda needs autoscaling.keda.serverAddress"}},
		{"minReplicas 0 (KEDA would scale the track to zero)", keda + ",autoscaling.minReplicas=0", []string{"autoscaling/minReplicas", "minimum"}},
		{"minReplicas 0 on one track", keda + ",tracks.gray.autoscaling.minReplicas=0", []string{"tracks/gray/autoscaling/minReplicas", "minimum"}},
		{"an unknown mode", "autoscaling.mode=vpa", []string{"autoscaling/mode", "hpa", "keda"}},
		{"a window the rules do not record", keda + ",autoscaling.keda.window=2m", []string{`autoscaling.keda.window "2m" must be one of rules.windows`}},
		{"a server address that is no URL", "autoscaling.mode=keda,autoscaling.keda.serverAddress=prometheus:9090", []string{"autoscaling/keda/serverAddress"}},
		{"a threshold that is no number", keda + ",autoscaling.keda.latencyThreshold=fast", []string{"autoscaling/keda/latencyThreshold"}},
		{"keda with the prometheus-adapter pods metric", keda + ",autoscaling.podsMetric.enabled=true", []string{"mode=keda cannot use podsMetric"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := render.HelmTemplateArgs(deploytest.ChartDir(t), render.ValueSet{Name: "default"}, "--set", tc.set)
			_, err := render.Run(ctx, "", deploytest.Tool(t, "helm"), args...)
			if err == nil {
				t.Fatalf("helm template --set %s succeeded, want an error", tc.set)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%s", w, err)
				}
			}
		})
	}
}

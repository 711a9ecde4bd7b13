package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
)

func TestHelmLintStrict(t *testing.T) {
	helm := deploytest.Tool(t, "helm")
	chart := deploytest.ChartDir(t)
	for _, vs := range render.ValueSets {
		t.Run(vs.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := []string{"lint", "--strict", chart, "--kube-version", render.KubeVersion, "--namespace", render.Namespace}
			for _, f := range vs.Files {
				args = append(args, "-f", filepath.Join(chart, f))
			}
			out, err := render.Run(ctx, "", helm, args...)
			if err != nil {
				t.Fatalf("helm lint --strict with value set %q failed: %v\n%s", vs.Name, err, out)
			}
			if !bytes.Contains(out, []byte("0 chart(s) failed")) {
				t.Fatalf("unexpected helm lint output:\n%s", out)
			}
		})
	}
}

// TestHelmTemplateMatchesGolden compares `helm template` of each value set, without the dashboard
// ConfigMaps (TestDashboardConfigMapsMatchSource checks those), with deploy/testdata/helm.
func TestHelmTemplateMatchesGolden(t *testing.T) {
	helm := deploytest.Tool(t, "helm")
	root := deploytest.Root(t)
	for _, vs := range render.ValueSets {
		t.Run(vs.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			f, err := render.HelmGolden(ctx, root, helm, vs)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, root, f)
		})
	}
}

// TestDashboardConfigMapsMatchSource checks every dashboard ConfigMap that a value set or an
// overlay renders: its data is dashboards/<name>.json, and a rendering with dashboards has them all.
func TestDashboardConfigMapsMatchSource(t *testing.T) {
	root := deploytest.Root(t)
	src, err := render.Dashboards(root)
	if err != nil {
		t.Fatal(err)
	}
	renders := map[string]func(t *testing.T) []byte{}
	for _, vs := range render.ValueSets {
		renders["helm "+vs.Name] = func(t *testing.T) []byte { return deploytest.HelmTemplate(t, vs) }
	}
	for _, o := range render.Overlays {
		renders["kustomize "+o] = func(t *testing.T) []byte { return deploytest.KustomizeBuild(t, filepath.Join("overlays", o)) }
	}
	withDashboards := 0
	for name, r := range renders {
		t.Run(name, func(t *testing.T) {
			cms, err := render.DashboardConfigMaps(root, r(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(cms) == 0 {
				return // dashboards are off in this rendering
			}
			withDashboards++
			seen := map[string]bool{}
			for cm, data := range cms {
				for key, got := range data {
					want, ok := src[key]
					if !ok {
						t.Errorf("ConfigMap %s holds %s, which is not in dashboards/", cm, key)
						continue
					}
					seen[key] = true
					// The chart embeds the file as a YAML block scalar, which drops the final newline.
					if got != strings.TrimSuffix(string(want), "\n") {
						t.Errorf("ConfigMap %s: %s differs from dashboards/%s (run make generate):\n%s", cm, key, key, lineDiff(string(want), got))
					}
				}
			}
			for key := range src {
				if !seen[key] {
					t.Errorf("no ConfigMap holds dashboards/%s", key)
				}
			}
		})
	}
	if withDashboards == 0 {
		t.Error("no value set or overlay renders the dashboards: nothing was compared")
	}
}

func TestHelmTemplateKeepsTheTrackContract(t *testing.T) {
	for _, vs := range render.ValueSets {
		t.Run(vs.Name, func(t *testing.T) {
			objs, err := deploytest.Decode(deploytest.HelmTemplate(t, vs))
			if err != nil {
				t.Fatal(err)
			}
			if err := deploytest.CheckTracks(objs); err != nil {
				t.Errorf("track contract broken:\n%v", err)
			}
			if err := deploytest.CheckNoReplicasUnderHPA(objs); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestValuesSchemaRejectsBadValues(t *testing.T) {
	helm := deploytest.Tool(t, "helm")
	chart := deploytest.ChartDir(t)
	cases := []struct {
		name string
		set  string
		want []string // substrings of helm's error
	}{
		{"a gray weight above 100", "routing.gatewayAPI.weights.gray=101", []string{"routing/gatewayAPI/weights/gray", "100"}},
		{"a negative stable weight", "routing.gatewayAPI.weights.stable=-1", []string{"routing/gatewayAPI/weights/stable", "0"}},
		{"the old httpRoute key, which moved", "httpRoute.enabled=true", []string{"/httpRoute", "httpRoute was removed: set routing.mode=gatewayAPI", "under routing.gatewayAPI"}},
		{"an unknown routing mode", "routing.mode=ingress", []string{"routing/mode", "gatewayAPI"}},
		{"a listener port out of range", "routing.gatewayAPI.gateway.port=0", []string{"routing/gatewayAPI/gateway/port"}},
		{"a parentRef without a name", "routing.gatewayAPI.parentRefs[0].namespace=gateways", []string{"routing/gatewayAPI/parentRefs/0", "name"}},
		{"a pool mode that is no label value", "tracks.gray.poolMode=Bad_Mode", []string{"tracks/gray/poolMode", "does not match pattern"}},
		{"a negative replica count", "tracks.stable.replicas=-1", []string{"tracks/stable/replicas", "0"}},
		{"a CPU target above 100%", "autoscaling.targetCPUUtilizationPercentage=150", []string{"autoscaling/targetCPUUtilizationPercentage"}},
		{"an unknown log level", "logLevel=verbose", []string{"logLevel"}},
		{"a misspelt top-level key", "replicaCount=3", []string{"replicaCount"}},
		{"a malformed GOMEMLIMIT", "goRuntime.gomemlimit=lots", []string{"goRuntime/gomemlimit"}},
		{"a malformed GOGC of one track", "tracks.gray.goRuntime.gogc=fast", []string{"tracks/gray/goRuntime/gogc"}},
		{"a GOMEMLIMIT fraction above 1", "goRuntime.gomemlimitFraction=1.5", []string{"goRuntime/gomemlimitFraction"}},
		{"a GOMEMLIMIT fraction that is no number", "tracks.stable.goRuntime.gomemlimitFraction=most", []string{"tracks/stable/goRuntime/gomemlimitFraction"}},
		{"a live heap floor that is no size", "goRuntime.liveHeapFloor=some", []string{"goRuntime/liveHeapFloor"}},
		{"an unknown Go runtime key", "tracks.gray.goRuntime.gomaxprocs=2", []string{"tracks/gray/goRuntime", "gomaxprocs"}},
		{"no Redis that the pods share", "redis.enabled=false", []string{"redis", "embedded"}},
		{"an in-cluster and an external Redis", "redis.externalAddress=r:6379", []string{"redis"}},
		{"an in-cluster and an embedded Redis", "redis.embedded=true", []string{"redis"}},
		{"an external and an embedded Redis", "redis.enabled=false,redis.externalAddress=r:6379,redis.embedded=true", []string{"redis"}},
		{"an in-cluster Redis and none", "redis.none=true", []string{"redis"}},
		{"an unknown AOF fsync policy", "redis.persistence.appendfsync=sometimes", []string{"redis/persistence/appendfsync", "everysec"}},
		{"a claim size that is no quantity", "redis.persistence.size=big", []string{"redis/persistence/size"}},
		{"an unknown access mode", "redis.persistence.accessModes={ReadWriteSometimes}", []string{"redis/persistence/accessModes"}},
		{"the old redis.existingSecret key, which moved", "redis.existingSecret=pp-redis", []string{"/redis/existingSecret", "set redis.auth.existingSecret"}},
		{"the old redis.existingSecretKey key, which moved", "redis.existingSecretKey=pw", []string{"/redis/existingSecretKey", "set redis.auth.existingSecretKey"}},
		{"a Redis Secret name that is no object name", "redis.auth.existingSecret=Redis_Auth", []string{"redis/auth/existingSecret"}},
		{"an unknown Redis auth key", "redis.auth.password=hunter2", []string{"redis/auth", "password"}},
		{"an unknown Redis NetworkPolicy key", "redis.networkPolicy.ingressFrom={}", []string{"redis/networkPolicy", "ingressFrom"}},
		{"no Prometheus endpoint for the controller", "controller.prometheus.endpoints=null", []string{"controller/prometheus", "endpoints"}},
		{"a Prometheus endpoint that is no http(s) URL", "controller.prometheus.endpoints={prometheus:9090}", []string{"controller/prometheus/endpoints/0", "https?://"}},
		{"a Prometheus endpoint holding a comma", `controller.prometheus.endpoints={http://a\,b}`, []string{"controller/prometheus/endpoints/0"}},
		{"a Prometheus endpoint with a password in it", "controller.prometheus.endpoints={http://admin:pw@prometheus:9090}", []string{"controller/prometheus/endpoints/0"}},
		{"a Prometheus endpoint with a query", "controller.prometheus.endpoints={http://prometheus:9090/?x=1}", []string{"controller/prometheus/endpoints/0"}},
		{"a Prometheus endpoint without a host", "controller.prometheus.endpoints={http:///api}", []string{"controller/prometheus/endpoints/0"}},
		{"a Prometheus answer bound below 1024 bytes", "controller.prometheus.maxResponseBytes=512", []string{"controller/prometheus/maxResponseBytes", "1,024"}},
		{"a reconcile timeout that is no duration", "controller.reconcileTimeout=2min", []string{"controller/reconcileTimeout"}},
		{"a watched namespace that is no namespace name", "controller.watchNamespace=Shop", []string{"controller/watchNamespace"}},
		{"a misspelt controller key", "controller.watchNamespaces=shop", []string{"controller", "watchNamespaces"}},
		{"an unknown whenUnsatisfiable", "topologySpread.whenUnsatisfiable=Never", []string{"topologySpread/whenUnsatisfiable", "ScheduleAnyway"}},
		{"a zero maxSkew", "topologySpread.maxSkew=0", []string{"topologySpread/maxSkew"}},
		{"a negative grace period", "shutdown.terminationGracePeriodSeconds=-1", []string{"shutdown/terminationGracePeriodSeconds"}},
		{"a pprof port out of range", "pprof.port=65536", []string{"pprof/port"}},
		{"an unknown set of request metrics", "rules.http.metrics=prometheus", []string{"rules/http/metrics", "semconv"}},
		{"an unknown source of runtime series", "rules.runtime.metrics=expvar", []string{"rules/runtime/metrics", "otel"}},
		{"custom request metrics without their names", "rules.http.metrics=custom", []string{"rules/http/"}},
		{"a code label that is no label name", "rules.http.codeLabel=http.status", []string{"rules/http/codeLabel"}},
		{"a request label that is no label name", "rules.http.requestLabels={http.route}", []string{"rules/http/requestLabels"}},
		{"an empty custom requests counter", "rules.http.metrics=custom,rules.http.durationHistogram=d,rules.http.codeLabel=c,rules.http.requestLabels={c}", []string{"rules/http/requestsTotal"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := render.HelmTemplateArgs(chart, render.ValueSet{Name: "default"}, "--set", tc.set)
			_, err := render.Run(ctx, "", helm, args...)
			if err == nil {
				t.Fatalf("helm template --set %s succeeded, want a values.schema.json error", tc.set)
			}
			msg := err.Error()
			if !strings.Contains(msg, "values don't meet the specifications of the schema") {
				t.Errorf("error does not come from the schema:\n%s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

// TestValuesSchemaAcceptsEachRedisChoice renders the chart with each of the four Redis choices
// and checks what REDIS_ADDR the pods get.
func TestValuesSchemaAcceptsEachRedisChoice(t *testing.T) {
	cases := []struct {
		name, set string
		addr      string // the REDIS_ADDR every app container gets; empty: none
		redisObjs bool   // the in-cluster Redis objects are rendered
	}{
		{"in-cluster (the default)", "", "poolparity-redis:6379", true},
		{"external", "redis.enabled=false,redis.externalAddress=r.example:6379", "r.example:6379", false},
		{"embedded, one pod only", "redis.enabled=false,redis.embedded=true", "", false},
		{"none, a service that uses no Redis", "redis.enabled=false,redis.none=true", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, _ := renderObjects(t, tc.set, "")
			apps, redisObjs := 0, 0
			for _, o := range objs {
				component := o.GetLabels()["app.kubernetes.io/component"]
				if component == "redis" {
					redisObjs++
				}
				if o.GetKind() != "Deployment" || component != "app" {
					continue
				}
				apps++
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
				got := ""
				for _, e := range env {
					if m := e.(map[string]any); m["name"] == "REDIS_ADDR" {
						got, _ = m["value"].(string)
					}
				}
				if got != tc.addr {
					t.Errorf("%s: REDIS_ADDR = %q, want %q", o.GetName(), got, tc.addr)
				}
			}
			if apps == 0 {
				t.Fatal("no app Deployment rendered")
			}
			if (redisObjs > 0) != tc.redisObjs {
				t.Errorf("%d in-cluster Redis objects, want present=%v", redisObjs, tc.redisObjs)
			}
		})
	}
}

// TestRenderFailsWhenGraceIsNotAboveTheDrain checks the render-time check of
// terminationGracePeriodSeconds: it must exceed preStop sleep + SHUTDOWN_DELAY + SHUTDOWN_TIMEOUT,
// or the kubelet kills pods that are still draining.
func TestRenderFailsWhenGraceIsNotAboveTheDrain(t *testing.T) {
	cases := []struct {
		name, set string
		grace     string // the rendered terminationGracePeriodSeconds; empty: the render must fail
	}{
		{"the default: 0 + 5 + 20 + 5 slack", "", "30"},
		{"an explicit grace above the drain", "shutdown.terminationGracePeriodSeconds=26", "26"},
		{"an explicit grace equal to the drain", "shutdown.terminationGracePeriodSeconds=25", ""},
		{"a grace below the drain with a preStop sleep", "shutdown.preStopSleepSeconds=10,shutdown.terminationGracePeriodSeconds=30", ""},
		{"no slack", "shutdown.graceSlackSeconds=0", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fail := ""
			if tc.grace == "" {
				fail = "must be above shutdown.preStopSleepSeconds + delaySeconds + timeoutSeconds"
			}
			apps, ok := renderApps(t, tc.set, fail)
			if !ok {
				return
			}
			for _, o := range apps {
				if got, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "template", "spec", "terminationGracePeriodSeconds"); fmt.Sprint(got) != tc.grace {
					t.Errorf("%s: terminationGracePeriodSeconds %v, want %s", o.GetName(), got, tc.grace)
				}
			}
		})
	}
}

// renderObjects renders the default values with --set set (nothing when empty), test hooks
// included, and decodes the objects. For the tests of the chart's render-time checks, fail is a
// substring of the error the render must end with (then it returns false); empty, any render
// error fails the test.
func renderObjects(t *testing.T, set, fail string) ([]*unstructured.Unstructured, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var extra []string
	if set != "" {
		extra = []string{"--set", set}
	}
	out, err := render.Run(ctx, "", deploytest.Tool(t, "helm"), render.HelmTemplateArgs(deploytest.ChartDir(t), render.ValueSet{Name: "default"}, extra...)...)
	if fail != "" {
		if err == nil || !strings.Contains(err.Error(), fail) {
			t.Fatalf("render error %v, want one containing %q", err, fail)
		}
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploytest.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs, true
}

// renderApps renders like renderObjects and returns the two track Deployments by track name.
func renderApps(t *testing.T, set, fail string) (map[string]*unstructured.Unstructured, bool) {
	t.Helper()
	objs, ok := renderObjects(t, set, fail)
	if !ok {
		return nil, false
	}
	apps := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetLabels()["app.kubernetes.io/component"] == "app" {
			apps[o.GetLabels()["poolparity.dev/track"]] = o
		}
	}
	if len(apps) != 2 {
		t.Fatalf("%d track Deployments rendered, want 2", len(apps))
	}
	return apps, true
}

// appEnv is the literal env values of a track Deployment's service container (those set
// through valueFrom are left out).
func appEnv(d *unstructured.Unstructured) map[string]string {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	out := map[string]string{}
	for _, e := range env {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			out[m["name"].(string)] = v
		}
	}
	return out
}

// TestGoRuntimePerTrack renders each track's GOGC and GOMEMLIMIT: the tracks tuned apart, the
// limit derived from the container's memory limit as a fraction or given in bytes, and the render
// refusing a limit that cannot work, with one message naming the track.
func TestGoRuntimePerTrack(t *testing.T) {
	cases := []struct {
		name, set string
		// GOGC and GOMEMLIMIT per track ("-": not set); empty maps: the render must fail.
		gogc, limit map[string]string
		fail        string // a substring of the render's error
	}{
		{"the default: 0.9 of the 256Mi limit on both tracks", "",
			map[string]string{"stable": "100", "gray": "100"}, map[string]string{"stable": "241591910", "gray": "241591910"}, ""},
		{"the tracks tuned apart", "tracks.gray.goRuntime.gogc=400,tracks.gray.goRuntime.gomemlimitFraction=0.5,tracks.stable.goRuntime.gogc=off",
			map[string]string{"stable": "off", "gray": "400"}, map[string]string{"stable": "241591910", "gray": "134217728"}, ""},
		{"a track's own memory limit scales its fraction", "tracks.gray.resources.limits.memory=1Gi",
			map[string]string{"stable": "100", "gray": "100"}, map[string]string{"stable": "241591910", "gray": "966367641"}, ""},
		{"bytes given win over the fraction", "tracks.gray.goRuntime.gomemlimit=200MiB",
			map[string]string{"stable": "100", "gray": "100"}, map[string]string{"stable": "241591910", "gray": "200MiB"}, ""},
		{"a fraction of 0 and no GOGC leave both unset", "goRuntime.gomemlimitFraction=0,goRuntime.gogc=",
			map[string]string{"stable": "-", "gray": "-"}, map[string]string{"stable": "-", "gray": "-"}, ""},
		{"off is passed through", "goRuntime.gomemlimit=off",
			map[string]string{"stable": "100", "gray": "100"}, map[string]string{"stable": "off", "gray": "off"}, ""},
		{"a limit below the live heap floor", "tracks.gray.goRuntime.gomemlimit=8MiB", nil, nil,
			"tracks.gray.goRuntime: GOMEMLIMIT 8MiB (8388608 bytes) is below liveHeapFloor 16MiB"},
		{"a fraction that lands below the floor", "tracks.stable.goRuntime.gomemlimitFraction=0.05", nil, nil,
			"tracks.stable.goRuntime: GOMEMLIMIT 13421772 (13421772 bytes) is below liveHeapFloor"},
		{"a limit above the container's memory", "tracks.gray.goRuntime.gomemlimit=300MiB", nil, nil,
			"tracks.gray.goRuntime: GOMEMLIMIT 300MiB (314572800 bytes) is above the container's memory limit 256Mi"},
		{"a fraction with no memory limit", "resources.limits=null", nil, nil,
			"tracks.stable.goRuntime.gomemlimitFraction=0.9 needs a memory limit"},
		{"a memory limit that is no quantity", "tracks.gray.resources.limits.memory=2x", nil, nil,
			`tracks.gray.resources.limits.memory="2x": want a whole number of bytes`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apps, ok := renderApps(t, tc.set, tc.fail)
			if !ok {
				return
			}
			for track, d := range apps {
				env := appEnv(d)
				got := map[string]string{"GOGC": "-", "GOMEMLIMIT": "-"}
				for name := range got {
					if v, ok := env[name]; ok {
						got[name] = v
					}
				}
				if got["GOGC"] != tc.gogc[track] || got["GOMEMLIMIT"] != tc.limit[track] {
					t.Errorf("%s track: GOGC %s, GOMEMLIMIT %s; want %s and %s", track, got["GOGC"], got["GOMEMLIMIT"], tc.gogc[track], tc.limit[track])
				}
			}
		})
	}
}

// TestPprofPort renders the chart with the pprof port off (the default) and on: each track's
// app container gets PPROF_ADDR and a containerPort named pprof, and no Service exposes it.
func TestPprofPort(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		addr      string // PPROF_ADDR on every app container; empty: none, nor the port
	}{
		{"off by default", "", ""},
		{"on a port of its own", "pprof.port=6060", ":6060"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, ok := renderObjects(t, tc.set, "")
			if !ok {
				return
			}
			apps := 0
			for _, o := range objs {
				switch {
				case o.GetKind() == "Deployment" && o.GetLabels()["app.kubernetes.io/component"] == "app":
					apps++
					if got := appEnv(o)["PPROF_ADDR"]; got != tc.addr {
						t.Errorf("%s: PPROF_ADDR %q, want %q", o.GetName(), got, tc.addr)
					}
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					ports, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "ports")
					named := false
					for _, p := range ports {
						named = named || p.(map[string]any)["name"] == "pprof"
					}
					if named != (tc.addr != "") {
						t.Errorf("%s: a containerPort named pprof: %v, want %v", o.GetName(), named, tc.addr != "")
					}
				case o.GetKind() == "Service":
					ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
					for _, p := range ports {
						if m := p.(map[string]any); m["name"] == "pprof" || fmt.Sprint(m["targetPort"]) == "pprof" || fmt.Sprint(m["port"]) == "6060" {
							t.Errorf("Service %s exposes the pprof port: %v", o.GetName(), m)
						}
					}
				}
			}
			if apps != 2 {
				t.Errorf("%d app Deployments, want 2", apps)
			}
		})
	}
}

// TestRedisPersistenceValues renders the in-cluster Redis with each persistence choice and checks
// the StatefulSet's AOF arguments, claim template and volumes.
func TestRedisPersistenceValues(t *testing.T) {
	cases := []struct {
		name, set    string
		args         string // the redis container's arguments, joined by spaces
		claim        bool
		storageClass string
	}{
		{"the default: AOF, everysec, on a claim of the default class", "", `--save  --dir /data --appendonly yes --appendfsync everysec --requirepass $(REDIS_PASSWORD)`, true, ""},
		{"fsync always on a named class", "redis.persistence.appendfsync=always,redis.persistence.storageClassName=local-path", `--save  --dir /data --appendonly yes --appendfsync always --requirepass $(REDIS_PASSWORD)`, true, "local-path"},
		{"persistence off: memory only, an emptyDir", "redis.persistence.enabled=false", `--save  --dir /data --appendonly no --requirepass $(REDIS_PASSWORD)`, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, _ := renderObjects(t, tc.set, "")
			var sets int
			for _, o := range objs {
				if o.GetKind() == "Deployment" && o.GetLabels()["app.kubernetes.io/component"] == "redis" {
					t.Errorf("Redis is a Deployment: want a StatefulSet")
				}
				if o.GetKind() != "StatefulSet" {
					continue
				}
				sets++
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
				if got := strings.Join(args, " "); got != tc.args {
					t.Errorf("redis args %q, want %q", got, tc.args)
				}
				claims, _, _ := unstructured.NestedSlice(o.Object, "spec", "volumeClaimTemplates")
				volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
				if tc.claim != (len(claims) == 1) || tc.claim == (len(volumes) == 1) {
					t.Errorf("%d claim templates and %d volumes, want a claim: %v", len(claims), len(volumes), tc.claim)
				}
				if tc.claim {
					class, found, _ := unstructured.NestedString(claims[0].(map[string]any), "spec", "storageClassName")
					if class != tc.storageClass || found != (tc.storageClass != "") {
						t.Errorf("storageClassName %q (set: %v), want %q (unset when empty: the default class)", class, found, tc.storageClass)
					}
				}
			}
			if sets != 1 {
				t.Errorf("%d StatefulSets, want the Redis one", sets)
			}
		})
	}
}

// compareGolden compares a generated file with its committed copy under root. Only hack/gen
// (`make generate`) writes them, through the same deploy/render functions.
func compareGolden(t *testing.T, root string, f render.File) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(root, f.Path))
	if err != nil {
		t.Fatalf("reading %s (run make generate to create it): %v", f.Path, err)
	}
	if !bytes.Equal(f.Data, want) {
		t.Errorf("rendering differs from %s (run make generate after checking the change):\n%s", f.Path, lineDiff(string(want), string(f.Data)))
	}
}

// lineDiff shows the first differing lines with some context.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			var b strings.Builder
			for j := max(0, i-3); j < i; j++ {
				b.WriteString("  " + wl[j] + "\n")
			}
			b.WriteString("- " + w + "\n+ " + g + "\n")
			b.WriteString("(line " + itoa(i+1) + "; want " + itoa(len(wl)) + " lines, got " + itoa(len(gl)) + ")")
			return b.String()
		}
	}
	return "(no line differs)"
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestChartDashboardsMatchSource is the drift test of the chart's copies of the Grafana dashboards:
// Helm cannot read files outside the chart, so files/dashboards/ holds byte-for-byte copies of
// dashboards/*.json (make generate refreshes them).
func TestChartDashboardsMatchSource(t *testing.T) {
	root := deploytest.Root(t)
	files, err := render.ChartDashboards(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		compareGolden(t, root, f)
	}
	stale, err := render.StaleChartDashboards(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Errorf("%s has no source in dashboards/ (make generate removes it)", s)
	}
}

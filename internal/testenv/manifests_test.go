package testenv_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/testenv"
	"github.com/poolparity/poolparity/internal/testtool"
)

// manifestSource is one rendering of the deployment manifests.
type manifestSource struct {
	name   string // also the namespace the objects are applied into
	render func(t *testing.T) []byte
}

func manifestSources() []manifestSource {
	var out []manifestSource
	for _, vs := range render.ValueSets {
		out = append(out, manifestSource{"helm-" + vs.Name, func(t *testing.T) []byte { return deploytest.HelmTemplate(t, vs) }})
	}
	for _, o := range render.Overlays {
		out = append(out, manifestSource{"kustomize-" + o, func(t *testing.T) []byte {
			return deploytest.KustomizeBuild(t, filepath.Join("overlays", o))
		}})
	}
	return out
}

// TestManifestsAdmittedByAPIServer creates every rendering of the chart and of the kustomize
// overlays by server-side apply on a real kube-apiserver, in namespaces that enforce the
// restricted Pod Security Standard, then checks the stored objects against the track contract.
func TestManifestsAdmittedByAPIServer(t *testing.T) {
	// Render first: a missing helm/kustomize skips before the control plane starts.
	sources := manifestSources()
	rendered := map[string][]byte{}
	for _, src := range sources {
		rendered[src.name] = src.render(t)
	}

	env := testenv.Start(t, testenv.WithPrometheusOperatorCRDs(), testenv.WithGatewayAPICRDs(), testenv.WithKEDACRDs())
	t.Logf("envtest control plane with CRDs started in %s", env.StartDuration.Round(time.Millisecond))
	ctx := context.Background()

	t.Run("PodSecurity admission is enforced (a privileged pod is refused)", func(t *testing.T) {
		ns := "pss-probe"
		if err := env.CreateNamespace(ctx, ns, testenv.RestrictedLabels()); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			}}},
		}
		err := env.DryRunCreate(ctx, pod)
		if err == nil || !testenv.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
			t.Fatalf("a privileged pod in a restricted namespace: got %v, want a PodSecurity Forbidden error", err)
		}
	})

	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			objs, err := deploytest.Decode(rendered[src.name])
			if err != nil {
				t.Fatal(err)
			}
			ns := src.name
			if err := env.CreateNamespace(ctx, ns, testenv.RestrictedLabels()); err != nil {
				t.Fatal(err)
			}
			var pods, others []*unstructured.Unstructured
			for _, o := range objs {
				o.SetNamespace("") // every namespaced object goes into this source's namespace
				if o.GetKind() == "Pod" {
					pods = append(pods, o)
				} else {
					others = append(others, o)
				}
			}
			begin := time.Now()
			applied, err := env.Apply(ctx, ns, others, false)
			if err != nil {
				t.Fatalf("server-side apply refused an object: %v", err)
			}
			t.Logf("applied %d objects in %s: %s", len(applied), time.Since(begin).Round(time.Millisecond), deploytest.Names(applied))

			// Pods (the helm test hook) are created for real in dry-run: PodSecurity enforces on Pods.
			if _, err := env.Apply(ctx, ns, pods, true); err != nil {
				t.Errorf("a Pod was refused: %v", err)
			}
			// Workloads' pod templates: PodSecurity only warns on workloads, so judge them as Pods.
			stored := readBack(ctx, t, env, applied)
			for _, o := range stored {
				name, tmpl, ok := podTemplate(t, o)
				if !ok {
					continue
				}
				if err := env.DryRunCreate(ctx, testenv.PodFromTemplate(name+"-template", ns, tmpl)); err != nil {
					t.Errorf("the pod template of %s %s is not admitted under restricted PodSecurity: %v", o.GetKind(), name, err)
				}
			}

			if err := deploytest.CheckTracks(stored); err != nil {
				t.Errorf("admitted objects break the track contract:\n%v", err)
			}
			for _, o := range stored {
				if o.GetKind() == "PrometheusRule" {
					checkRulesMatchSource(t, o)
				}
			}
		})
	}
}

// podTemplate returns the pod template of a Deployment or a StatefulSet, as the pod its controller
// would create: a StatefulSet's claim templates become the volumes of ordinal 0's claims.
func podTemplate(t *testing.T, o *unstructured.Unstructured) (string, corev1.PodTemplateSpec, bool) {
	t.Helper()
	switch o.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		return d.Name, d.Spec.Template, true
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
			t.Fatal(err)
		}
		tmpl := *s.Spec.Template.DeepCopy()
		for _, c := range s.Spec.VolumeClaimTemplates {
			tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + s.Name + "-0"},
			}})
		}
		return s.Name, tmpl, true
	}
	return "", corev1.PodTemplateSpec{}, false
}

// readBack gets every object as the apiserver stored it (defaults and pruning applied).
func readBack(ctx context.Context, t *testing.T, env *testenv.Env, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatalf("reading back %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		out = append(out, got)
	}
	return out
}

// checkRulesMatchSource compares the stored PrometheusRule's groups with the plain rules file that
// hack/genrules renders from the same template (deploy/prometheus/poolparity.rules.yml).
func checkRulesMatchSource(t *testing.T, rule *unstructured.Unstructured) {
	t.Helper()
	root, err := deploytest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "deploy", "prometheus", "poolparity.rules.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		testtool.SkipOrFail(t, "rules source %s missing (hack/genrules writes it): %v", path, err)
	}
	var file struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	got, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Groups) == 0 || len(got) == 0 {
		t.Fatalf("empty rule groups: PrometheusRule has %d, %s has %d", len(got), path, len(file.Groups))
	}
	if !reflect.DeepEqual(normalize(t, got), normalize(t, file.Groups)) {
		g, _ := yaml.Marshal(got)
		t.Errorf("PrometheusRule %s groups differ from %s (rerun hack/genrules?):\nPrometheusRule:\n%s", rule.GetName(), path, g)
	}
}

// normalize round-trips through JSON so numbers and maps compare the same way from both sources.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

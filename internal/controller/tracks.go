package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/instrument"
)

// appName is the chart's app.kubernetes.io/name of the service pods.
const appName = "poolparity"

// managerName is the app.kubernetes.io/managed-by value and the server-side apply field
// owner of the Deployments this controller writes.
const managerName = "poolparity-controller"

// grayStatus is the gray-status label (and gray_status metric label) of a track's pods:
// instrument's value of the gray track, the fresh baseline or the stable track.
func grayStatus(track string) string {
	switch track {
	case v1alpha1.TrackGray:
		return instrument.GrayStatusGray
	case v1alpha1.TrackBaseline:
		return instrument.GrayStatusBaseline
	}
	return instrument.GrayStatusStable
}

// effectiveSelector is spec.selector, or the chart's labels for this canary when it is empty.
func effectiveSelector(pc *v1alpha1.PoolCanary) *metav1.LabelSelector {
	if s := pc.Spec.Selector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return s.DeepCopy()
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{
		v1alpha1.LabelName:      appName,
		v1alpha1.LabelInstance:  pc.Name,
		v1alpha1.LabelComponent: "app",
	}}
}

// selectorString renders the selector of both tracks for status.selector (the scale
// subresource's labelSelectorPath).
func selectorString(sel *metav1.LabelSelector) (string, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "", fmt.Errorf("parsing spec.selector: %w", err)
	}
	return s.String(), nil
}

// rolloutHash identifies a rollout: the pool modes and the trigger. Replicas and the
// template are left out on purpose: an HPA changes replicas all the time, and a new template
// rolls both tracks alike, which keeps the comparison fair.
//
// The gray's Go runtime is part of the candidate and counts too; left out of the JSON when
// unset, so that a canary without one keeps the hash it had before goRuntime existed.
func rolloutHash(spec *v1alpha1.PoolCanarySpec) string {
	var grayRuntime *v1alpha1.GoRuntime
	if spec.GoRuntime != nil {
		grayRuntime = spec.GoRuntime.Gray
	}
	b, _ := json.Marshal(struct {
		Stable, Gray  v1alpha1.PoolMode
		Trigger       string
		GrayGoRuntime *v1alpha1.GoRuntime `json:",omitempty"`
	}{spec.PoolModes.Stable, spec.PoolModes.Gray, spec.Trigger, grayRuntime})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// trackSelector is the canary's selector narrowed to one track's pods (a copy; sel is not
// changed).
func trackSelector(sel *metav1.LabelSelector, track string) *metav1.LabelSelector {
	s := sel.DeepCopy()
	if s.MatchLabels == nil {
		s.MatchLabels = map[string]string{}
	}
	s.MatchLabels[v1alpha1.LabelTrack] = track
	return s
}

// trackLabels are the labels that say which track a pod or object belongs to.
func trackLabels(track string, mode v1alpha1.PoolMode) map[string]string {
	return map[string]string{
		v1alpha1.LabelTrack:      track,
		v1alpha1.LabelGrayStatus: grayStatus(track),
		v1alpha1.LabelPoolMode:   string(mode),
	}
}

// trackPodLabels are the labels of a track's pods: the chart's, the template's, the
// selector's and the track's, each overriding the ones before.
func trackPodLabels(pc *v1alpha1.PoolCanary, sel *metav1.LabelSelector, track string, mode v1alpha1.PoolMode) map[string]string {
	podLabels := map[string]string{
		v1alpha1.LabelName:      appName,
		v1alpha1.LabelInstance:  pc.Name,
		v1alpha1.LabelComponent: "app",
	}
	for k, v := range pc.Spec.Template.Labels {
		podLabels[k] = v
	}
	for k, v := range sel.MatchLabels {
		podLabels[k] = v
	}
	for k, v := range trackLabels(track, mode) {
		podLabels[k] = v
	}
	return podLabels
}

// trackObjectLabels are the labels of the objects the controller writes for a track (its
// Deployment, its Service).
func trackObjectLabels(pc *v1alpha1.PoolCanary, track string, mode v1alpha1.PoolMode) map[string]string {
	objLabels := map[string]string{
		v1alpha1.LabelName:      appName,
		v1alpha1.LabelInstance:  pc.Name,
		v1alpha1.LabelComponent: "app",
		v1alpha1.LabelManagedBy: managerName,
	}
	for k, v := range trackLabels(track, mode) {
		objLabels[k] = v
	}
	return objLabels
}

// controllerRef is the controller owner reference to the canary that the objects it owns
// carry, so that they go with it.
func controllerRef(pc *v1alpha1.PoolCanary) *metav1ac.OwnerReferenceApplyConfiguration {
	gvk := v1alpha1.GroupVersion.WithKind("PoolCanary")
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(pc.Name).
		WithUID(pc.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// trackDeployment builds the server-side apply configuration of one track's Deployment:
// the chart's labels, the track labels, the Downward API env, the replica count and a
// controller owner reference to the canary.
func trackDeployment(pc *v1alpha1.PoolCanary, sel *metav1.LabelSelector, track string, mode v1alpha1.PoolMode, replicas int32) (*appsv1ac.DeploymentApplyConfiguration, error) {
	tmpl := pc.Spec.Template.DeepCopy()
	podLabels := trackPodLabels(pc, sel, track, mode)
	tmpl.Labels = podLabels
	goRuntime := trackGoRuntime(pc.Spec.GoRuntime, track)
	for i := range tmpl.Spec.Containers {
		addDownwardEnv(&tmpl.Spec.Containers[i])
		if err := addGoRuntimeEnv(&tmpl.Spec.Containers[i], goRuntime, track); err != nil {
			return nil, err
		}
	}

	// Deployment selector: the canary's selector plus the track. pool-mode stays out of it
	// (selectors are immutable and a promotion changes the stable track's pool mode).
	dsel := trackSelector(sel, track)
	if s, err := metav1.LabelSelectorAsSelector(dsel); err != nil {
		return nil, fmt.Errorf("building the %s selector: %w", track, err)
	} else if !s.Matches(labels.Set(podLabels)) {
		return nil, fmt.Errorf("spec.selector %s does not match the %s pod labels %v", s, track, podLabels)
	}

	tmplAC, err := toApplyConfig[corev1ac.PodTemplateSpecApplyConfiguration](tmpl)
	if err != nil {
		return nil, fmt.Errorf("converting the pod template: %w", err)
	}
	selAC, err := toApplyConfig[metav1ac.LabelSelectorApplyConfiguration](dsel)
	if err != nil {
		return nil, fmt.Errorf("converting the selector: %w", err)
	}

	d := appsv1ac.Deployment(pc.TrackName(track), pc.Namespace).
		WithLabels(trackObjectLabels(pc, track, mode)).
		WithOwnerReferences(controllerRef(pc)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(selAC).
			WithTemplate(tmplAC))
	return d, nil
}

// addDownwardEnv gives a container GRAY_STATUS and POOL_MODE from the pod's labels, unless
// the template already sets them: a pod's labels and its metrics then cannot disagree.
func addDownwardEnv(c *corev1.Container) {
	for _, e := range []struct{ name, label string }{
		{"GRAY_STATUS", v1alpha1.LabelGrayStatus},
		{"POOL_MODE", v1alpha1.LabelPoolMode},
	} {
		found := false
		for _, have := range c.Env {
			if have.Name == e.name {
				found = true
				break
			}
		}
		if found {
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{
			Name: e.name,
			ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", e.label)},
			},
		})
	}
}

// trackGoRuntime is a track's Go runtime settings: the stable track's for stable and a
// fresh baseline; nil when none are set.
func trackGoRuntime(g *v1alpha1.TrackGoRuntimes, track string) *v1alpha1.GoRuntime {
	switch {
	case g == nil:
		return nil
	case track == v1alpha1.TrackGray:
		return g.Gray
	}
	return g.Stable
}

// addGoRuntimeEnv gives a container GOGC and GOMEMLIMIT from g, each unless the container
// sets it already. GOMEMLIMITPercent is applied to the container's own memory limit; a
// container without one is an error that names it.
func addGoRuntimeEnv(c *corev1.Container, g *v1alpha1.GoRuntime, track string) error {
	if g == nil {
		return nil
	}
	limit := g.GOMEMLIMIT
	if g.GOMEMLIMITPercent > 0 {
		mem, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok || mem.Value() <= 0 {
			return fmt.Errorf("spec.goRuntime.%s.gomemlimitPercent %d needs a memory limit on container %q of the %s track (resources.limits.memory); set one, or set gomemlimit", track, g.GOMEMLIMITPercent, c.Name, track)
		}
		limit = strconv.FormatInt(mem.Value()*int64(g.GOMEMLIMITPercent)/100, 10)
	}
	for _, e := range []struct{ name, value string }{{"GOGC", g.GOGC}, {"GOMEMLIMIT", limit}} {
		if e.value == "" || slices.ContainsFunc(c.Env, func(have corev1.EnvVar) bool { return have.Name == e.name }) {
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: e.name, Value: e.value})
	}
	return nil
}

// toApplyConfig converts a typed object into its apply configuration through JSON: both
// share the same field names, and zero values the typed object omits stay unset.
func toApplyConfig[T any](in any) (*T, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// deploymentReplicas is the pod count a Deployment reports (0 when absent).
func deploymentReplicas(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return d.Status.Replicas
}

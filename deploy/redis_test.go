package deploy_test

import (
	"encoding/base64"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// redisRender is what a rendering says about Redis: the in-cluster objects and the password each
// consumer gets.
type redisRender struct {
	secret     *corev1.Secret // the chart's generated password Secret, if any
	set        *appsv1.StatefulSet
	services   map[string]*corev1.Service // Redis Services by name
	policy     *networkingv1.NetworkPolicy
	appRefs    map[string]*corev1.SecretKeySelector // REDIS_PASSWORD of each track's service container
	testScript string                               // the helm test pod's script
	objs       []*unstructured.Unstructured
}

func renderRedis(t *testing.T, set string) redisRender {
	t.Helper()
	objs, _ := renderObjects(t, set, "")
	r := redisRender{services: map[string]*corev1.Service{}, appRefs: map[string]*corev1.SecretKeySelector{}, objs: objs}
	to := func(o *unstructured.Unstructured, v any) {
		t.Helper()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, v); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		component := o.GetLabels()["app.kubernetes.io/component"]
		switch {
		case o.GetKind() == "Secret" && component == "redis":
			r.secret = new(corev1.Secret)
			to(o, r.secret)
		case o.GetKind() == "StatefulSet":
			r.set = new(appsv1.StatefulSet)
			to(o, r.set)
		case o.GetKind() == "Service" && component == "redis":
			var s corev1.Service
			to(o, &s)
			r.services[s.Name] = &s
		case o.GetKind() == "NetworkPolicy" && component == "redis":
			r.policy = new(networkingv1.NetworkPolicy)
			to(o, r.policy)
		case o.GetKind() == "Deployment" && component == "app":
			var d appsv1.Deployment
			to(o, &d)
			track := d.Labels["poolparity.dev/track"]
			r.appRefs[track] = nil
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "REDIS_PASSWORD" {
					if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("%s: REDIS_PASSWORD is not read from a Secret: %+v", d.Name, e)
						continue
					}
					r.appRefs[track] = e.ValueFrom.SecretKeyRef
				}
			}
		case o.GetKind() == "Pod" && component == "test":
			var p corev1.Pod
			to(o, &p)
			r.testScript = strings.Join(p.Spec.Containers[0].Args, "\n")
		}
	}
	return r
}

// redisEnv returns the Redis container's env by name.
func (r redisRender) redisEnv() map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range r.set.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e
	}
	return out
}

// TestRedisAuth renders each choice of redis.auth and checks that Redis and both tracks agree on the
// password's Secret, that the password never appears in a pod spec, and that the chart creates a
// Secret only for its own Redis without existingSecret.
func TestRedisAuth(t *testing.T) {
	type ref struct{ name, key string } // empty name: no password
	cases := []struct {
		name, set string
		inCluster bool
		generated bool // the chart creates the Secret
		want      ref
	}{
		{"the default: a generated password", "", true, true, ref{"poolparity-redis", "redis-password"}},
		{"an existing Secret", "redis.auth.existingSecret=shared-redis,redis.auth.existingSecretKey=password", true, false, ref{"shared-redis", "password"}},
		{"auth turned off", "redis.auth.enabled=false", true, false, ref{}},
		{"auth off wins over an existing Secret", "redis.auth.enabled=false,redis.auth.existingSecret=shared-redis", true, false, ref{}},
		{"an external Redis with a password", "redis.enabled=false,redis.externalAddress=r.example:6379,redis.auth.existingSecret=ext", false, false, ref{"ext", "redis-password"}},
		{"an external Redis without one", "redis.enabled=false,redis.externalAddress=r.example:6379", false, false, ref{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := renderRedis(t, tc.set)
			if len(r.appRefs) != 2 {
				t.Fatalf("%d track Deployments, want 2", len(r.appRefs))
			}
			for track, got := range r.appRefs {
				switch {
				case tc.want.name == "" && got != nil:
					t.Errorf("%s: REDIS_PASSWORD from %s/%s, want none", track, got.Name, got.Key)
				case tc.want.name != "" && (got == nil || got.Name != tc.want.name || got.Key != tc.want.key):
					t.Errorf("%s: REDIS_PASSWORD from %+v, want Secret %s key %s", track, got, tc.want.name, tc.want.key)
				}
			}
			if (r.secret != nil) != tc.generated {
				t.Fatalf("a generated Secret: %v, want %v", r.secret != nil, tc.generated)
			}
			if r.secret != nil {
				pw := r.secret.Data["redis-password"]
				if r.secret.Name != tc.want.name || !regexp.MustCompile(`^[A-Za-z0-9]{32}$`).Match(pw) {
					t.Errorf("Secret %s holds %q, want %s with 32 random letters and digits", r.secret.Name, pw, tc.want.name)
				}
				for _, o := range r.objs {
					if o.GetKind() == "Secret" {
						continue
					}
					y, _ := yaml.Marshal(o.Object)
					if strings.Contains(string(y), string(pw)) || strings.Contains(string(y), base64.StdEncoding.EncodeToString(pw)) {
						t.Errorf("%s %s holds the password itself", o.GetKind(), o.GetName())
					}
				}
			}
			if !tc.inCluster {
				if r.set != nil {
					t.Errorf("an in-cluster Redis StatefulSet with an external Redis")
				}
				return
			}
			c := r.set.Spec.Template.Spec.Containers[0]
			env := r.redisEnv()
			args := strings.Join(c.Args, " ")
			if tc.want.name == "" {
				if strings.Contains(args, "--requirepass") || len(env) > 0 {
					t.Errorf("auth off: args %q and env %v, want no password", args, env)
				}
			} else {
				if !strings.HasSuffix(args, "--requirepass $(REDIS_PASSWORD)") {
					t.Errorf("redis args %q, want --requirepass $(REDIS_PASSWORD): the value from the environment", args)
				}
				for _, name := range []string{"REDIS_PASSWORD", "REDISCLI_AUTH"} {
					e, ok := env[name]
					if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
						e.ValueFrom.SecretKeyRef.Name != tc.want.name || e.ValueFrom.SecretKeyRef.Key != tc.want.key {
						t.Errorf("redis env %s = %+v, want Secret %s key %s", name, e, tc.want.name, tc.want.key)
					}
				}
			}
			// Readiness asks Redis as a client does (authenticated through REDISCLI_AUTH); liveness
			// only needs the port, so a long AOF load is not restarted.
			if p := c.ReadinessProbe; p == nil || p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "redis-cli -h 127.0.0.1 -p 6379 ping)\" = PONG") {
				t.Errorf("readiness probe %+v, want redis-cli ping answering PONG", p)
			}
			if p := c.LivenessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.String() != "redis" {
				t.Errorf("liveness probe %+v, want a TCP check of the redis port", p)
			}
		})
	}

	t.Run("every render without a cluster generates a new password", func(t *testing.T) {
		a, b := renderRedis(t, ""), renderRedis(t, "")
		if string(a.secret.Data["redis-password"]) == string(b.secret.Data["redis-password"]) {
			t.Errorf("two renders gave the same password %q: want a random one", a.secret.Data["redis-password"])
		}
	})
}

// TestRedisServicesAndNetworkPolicy: the StatefulSet is governed by a headless Service beside the
// ClusterIP Service the clients use, and the Redis NetworkPolicy (on by default) admits the
// release's service pods and the extra peers only, on the Redis port.
func TestRedisServicesAndNetworkPolicy(t *testing.T) {
	r := renderRedis(t, "")
	client, headless := r.services["poolparity-redis"], r.services["poolparity-redis-headless"]
	if client == nil || headless == nil || len(r.services) != 2 {
		t.Fatalf("Redis Services %v, want poolparity-redis and poolparity-redis-headless", slices.Sorted(maps.Keys(r.services)))
	}
	if client.Spec.ClusterIP == corev1.ClusterIPNone || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("clusterIP %q and %q (publishNotReadyAddresses %v), want a ClusterIP Service and a headless one listing pods before they are ready",
			client.Spec.ClusterIP, headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses)
	}
	if r.set.Spec.ServiceName != headless.Name {
		t.Errorf("StatefulSet serviceName %q, want the headless Service %q", r.set.Spec.ServiceName, headless.Name)
	}
	redisPod := labels.Set(r.set.Spec.Template.Labels)
	for _, s := range []*corev1.Service{client, headless} {
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(redisPod) {
			t.Errorf("Service %s does not select the Redis pod", s.Name)
		}
	}

	np := r.policy
	if np == nil {
		t.Fatal("no Redis NetworkPolicy by default")
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || !sel.Matches(redisPod) {
		t.Errorf("the NetworkPolicy selects %v, want the Redis pod (%v)", np.Spec.PodSelector, err)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.String() != "redis" {
		t.Fatalf("ingress %+v, want one rule on the redis port", np.Spec.Ingress)
	}
	admits := func(np *networkingv1.NetworkPolicy, pod map[string]string) bool {
		for _, peer := range np.Spec.Ingress[0].From {
			if peer.NamespaceSelector != nil || peer.IPBlock != nil || peer.PodSelector == nil {
				continue
			}
			if s, err := metav1.LabelSelectorAsSelector(peer.PodSelector); err == nil && s.Matches(labels.Set(pod)) {
				return true
			}
		}
		return false
	}
	app := func(instance, track string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": instance,
			"app.kubernetes.io/component": "app", "poolparity.dev/track": track}
	}
	for _, tc := range []struct {
		what string
		pod  map[string]string
		want bool
	}{
		{"the stable track", app("poolparity", "stable"), true},
		{"the gray track", app("poolparity", "gray"), true},
		{"another release's service", app("other", "stable"), false},
		{"the helm test pod (it never talks to Redis)", map[string]string{"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": "poolparity", "app.kubernetes.io/component": "test"}, false},
		{"the controller", map[string]string{"app.kubernetes.io/name": "poolparity", "app.kubernetes.io/instance": "poolparity", "app.kubernetes.io/component": "controller"}, false},
		{"any other pod", map[string]string{"app": "debug"}, false},
	} {
		if got := admits(np, tc.pod); got != tc.want {
			t.Errorf("%s: admitted %v, want %v", tc.what, got, tc.want)
		}
	}
	if !strings.Contains(r.testScript, "/api/v1/items?limit=1") {
		t.Errorf("the helm test does not check that the tracks read Redis:\n%s", r.testScript)
	}

	t.Run("extra peers", func(t *testing.T) {
		r := renderRedis(t, "redis.networkPolicy.extraIngressFrom[0].podSelector.matchLabels.app\\.kubernetes\\.io/instance=shop")
		if r.policy == nil || !admits(r.policy, app("shop", "gray")) || admits(r.policy, app("other", "gray")) {
			t.Errorf("with an extra peer for instance shop: %+v", r.policy)
		}
	})
	t.Run("turned off", func(t *testing.T) {
		if r := renderRedis(t, "redis.networkPolicy.enabled=false"); r.policy != nil {
			t.Errorf("redis.networkPolicy.enabled=false still renders %s", r.policy.Name)
		}
	})
	t.Run("no in-cluster Redis, no Redis policy and no Redis check in helm test", func(t *testing.T) {
		r := renderRedis(t, "redis.enabled=false,redis.none=true,networkPolicy.enabled=true")
		if r.policy != nil {
			t.Errorf("a Redis NetworkPolicy without the in-cluster Redis")
		}
		if strings.Contains(r.testScript, "/api/v1/items") {
			t.Errorf("helm test reads items without a Redis:\n%s", r.testScript)
		}
	})
}

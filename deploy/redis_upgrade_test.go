package deploy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/testenv"
)

// TestRedisPasswordKeptOnUpgrade installs the chart with helm on a real kube-apiserver (envtest:
// the objects are stored, no pod runs) and upgrades it: the generated Redis password survives
// every upgrade (the template looks the Secret up), an upgrade to redis.auth.existingSecret points
// Redis at that Secret and drops the chart's own, and redis.auth.enabled=false leaves no password.
func TestRedisPasswordKeptOnUpgrade(t *testing.T) {
	helm := deploytest.Tool(t, "helm")
	chart := deploytest.ChartDir(t)
	env := testenv.Start(t)
	t.Logf("envtest started in %s", env.StartDuration.Round(time.Millisecond))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns, release = "shop", "shop"
	if err := env.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	helmRun := func(args ...string) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		args = append([]string{"upgrade", "--install", release, chart, "--namespace", ns, "--kubeconfig", kubeconfig}, args...)
		if out, err := render.Run(c, "", helm, args...); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	// notesSay checks that the release's NOTES say where the Redis password is.
	notesSay := func(want string) {
		t.Helper()
		out, err := render.Run(ctx, "", helm, "get", "notes", release, "--namespace", ns, "--kubeconfig", kubeconfig)
		if err != nil || !bytes.Contains(out, []byte(want)) {
			t.Errorf("helm get notes (%v) lacks %q:\n%s", err, want, out)
		}
	}
	secretName := release + "-poolparity-redis"
	password := func() []byte {
		t.Helper()
		var s corev1.Secret
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s); err != nil {
			t.Fatalf("reading the Redis Secret: %v", err)
		}
		return s.Data["redis-password"]
	}
	redisSecretRef := func() string {
		t.Helper()
		var set appsv1.StatefulSet
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: release + "-poolparity-redis"}, &set); err != nil {
			t.Fatalf("reading the Redis StatefulSet: %v", err)
		}
		for _, e := range set.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "REDIS_PASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return e.ValueFrom.SecretKeyRef.Name
			}
		}
		return ""
	}

	helmRun()
	first := password()
	if len(first) != 32 {
		t.Fatalf("installed password %q, want 32 characters", first)
	}
	notesSay("password in Secret " + secretName)
	helmRun("--set", "logLevel=debug")
	helmRun()
	if again := password(); !bytes.Equal(again, first) {
		t.Errorf("after two upgrades the password is %q, want the installed %q", again, first)
	}

	helmRun("--set", "redis.auth.existingSecret=mine")
	if got := redisSecretRef(); got != "mine" {
		t.Errorf("with existingSecret, Redis reads its password from %q, want mine", got)
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s); !apierrors.IsNotFound(err) {
		t.Errorf("with existingSecret the chart's Secret is still there (%v)", err)
	}

	helmRun("--set", "redis.auth.enabled=false")
	if got := redisSecretRef(); got != "" {
		t.Errorf("with auth off, Redis reads a password from %q", got)
	}
	notesSay("no password (redis.auth.enabled=false)")
}

// Package controllertest runs the PoolCanary reconciler in a controller-runtime manager, as
// the controller binary wires it, against an API server a test started (internal/testenv):
// the controller's own tests and those of the commands that drive it (kubectl-poolcanary)
// share it.
package controllertest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Start runs the reconciler (with the Prometheus analyzer, four concurrent reconciles, the
// binary's cache options and HTTPRoutes read again every second) in a manager on cfg until the test ends, and registers its metrics
// on reg. The manager serves neither metrics nor probes. A manager that stops with an error
// fails the test. Each option may change the reconciler before it is set up (for example
// its PodAddr, since envtest's pods never run).
func Start(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, reg prometheus.Registerer, options ...func(*controller.PoolCanaryReconciler)) {
	t.Helper()
	// The binary's cache (only pods with the track label), so the warm-up reads through it.
	byObject, err := controller.CacheByObject()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{ByObject: byObject},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := controller.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Any endpoint: the tests' fake Prometheus servers listen on ports chosen at random. A
	// test of the allowed endpoints sets its own (an option).
	prom, err := promread.NewClients(nil, true, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := &controller.PoolCanaryReconciler{
		Prometheus:              prom,
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder("poolparity-controller"),
		Metrics:                 m,
		MaxConcurrentReconciles: 4,
		RouteResync:             time.Second, // a test's route edits are seen within a second
	}
	for _, o := range options {
		o(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// WaitFor polls cond every 50ms until it holds or timeout passes, then fails the test with
// what it waited for and cond's last note; it returns the note of the poll that held.
func WaitFor[T any](t testing.TB, timeout time.Duration, what string, cond func() (bool, T)) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, note := cond()
		if ok {
			return note
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %v", timeout, what, note)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NewNamespace creates a namespace named prefix-<random> and returns its name.
func NewNamespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// GetCanary reads a PoolCanary, failing the test when it cannot.
func GetCanary(ctx context.Context, t testing.TB, c client.Client, ns, name string) *v1alpha1.PoolCanary {
	t.Helper()
	var pc v1alpha1.PoolCanary
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pc); err != nil {
		t.Fatal(err)
	}
	return &pc
}

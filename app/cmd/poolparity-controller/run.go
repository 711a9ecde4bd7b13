package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Leader election stores its Lease in the controller's namespace (a namespaced Role in the chart).
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=poolparity-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// The leader election lock records its events with the core API in the same namespace.
// +kubebuilder:rbac:groups="",namespace=poolparity-system,resources=events,verbs=create;patch

// run parses the configuration (a bad setting is exit 2), builds the manager
// and blocks until ctx ends. The controller logs to stderr; it writes nothing
// to stdout.
func run(ctx context.Context, args []string, getenv func(string) string, _, stderr io.Writer) error {
	cfg, err := ParseConfig(args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	sl, err := cli.NewLogger(stderr, cfg.LogLevel)
	if err != nil {
		return err
	}
	logger := logr.FromSlogHandler(sl.Handler())
	ctrl.SetLogger(logger)
	if limit, set := setMemoryLimit(cfg.MemoryLimitBytes); set {
		logger.Info("Go soft memory limit set to 90% of the container's", "limitBytes", limit, "containerLimitBytes", cfg.MemoryLimitBytes)
	}

	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}

	opts := ctrl.Options{
		Scheme:                  scheme,
		Logger:                  logger,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:  cfg.HealthAddr,
		LeaderElection:          cfg.LeaderElect,
		LeaderElectionID:        cfg.LeaderElectionID,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		LeaseDuration:           &cfg.LeaseDuration,
		RenewDeadline:           &cfg.RenewDeadline,
		RetryPeriod:             &cfg.RetryPeriod,
		// Step down at once on shutdown: the next replica need not wait a lease duration.
		LeaderElectionReleaseOnCancel: true,
	}
	byObject, err := controller.CacheByObject()
	if err != nil {
		return err
	}
	opts.Cache = cache.Options{ByObject: byObject}
	if cfg.WatchNamespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{cfg.WatchNamespace: {}}
	}
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	// metrics.Registry is the registry the manager serves on METRICS_ADDR; registering the
	// controller's series there puts them beside controller-runtime's own.
	m, err := controller.NewMetrics(metrics.Registry)
	if err != nil {
		return err
	}
	prom, err := promread.NewClients(cfg.Endpoints(), false, promread.ClientConfig{
		MaxResponseBytes: int64(cfg.PrometheusMaxResponseBytes),
		StallAfter:       cfg.PrometheusStallAfter,
		Observer:         m,
	})
	if err != nil {
		return cli.Usage(err)
	}
	r := &controller.PoolCanaryReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder("poolparity-controller"),
		Prometheus:              prom,
		Metrics:                 m,
		MaxConcurrentReconciles: cfg.MaxConcurrentReconciles,
		ReconcileTimeout:        cfg.ReconcileTimeout,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PoolCanary controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	// Ready once the informers have synced, so a rolling update of the controller waits.
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informers not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}

	logger.Info("starting the manager", "metricsAddr", cfg.MetricsAddr, "healthAddr", cfg.HealthAddr,
		"leaderElect", cfg.LeaderElect, "watchNamespace", cfg.WatchNamespace, "prometheusEndpoints", prom.Allowed())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of containerLimit, unless it
// is 0 or a limit is set already (GOMEMLIMIT), and returns the limit it set.
func setMemoryLimit(containerLimit uint64) (int64, bool) {
	if containerLimit == 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return 0, false
	}
	limit := int64(min(containerLimit/10*9, math.MaxInt64))
	debug.SetMemoryLimit(limit)
	return limit, true
}

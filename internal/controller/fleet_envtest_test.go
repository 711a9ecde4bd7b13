package controller_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/controller/controllertest"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/testenv"
)

// TestFleetOnTime (issue 63, a CI-sized fleet): 40 Counts canaries over 8 namespaces, analysed
// every 2 seconds by the chart's 4 workers against one shared (fake) Prometheus that answers
// every read, for 20 seconds. Every canary is analysed on its clock (p99 lag under 4 s, the
// histogram's bucket), the rule list is read once per RulesTTL for all of them, and the
// figures are logged: analyses, their lag, and requests per analysis. Under the race detector,
// which slows the controller several times (208 analyses of 400 due in one run), the fleet is
// 12 canaries analysed every 4 seconds.
func TestFleetOnTime(t *testing.T) {
	canaries, namespaces, interval := 40, 8, 2*time.Second
	if raceEnabled {
		canaries, namespaces, interval = 12, 4, 4*time.Second
	}
	const run = 20 * time.Second
	scheme := testScheme(t)
	env := testenv.Start(t, testenv.WithScheme(scheme), testenv.WithCRDPaths(crdDir(t)))
	ctx := context.Background()
	c := env.Client

	prom := newFakeProm(t, "good", withCounts(countStep, time.Now(), countLead))
	var requests, ruleLists atomic.Int64
	shared := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/api/v1/rules" {
			ruleLists.Add(1)
		}
		prom.serve(w, r)
	}))
	t.Cleanup(shared.Close)
	clients, err := promread.NewClients([]string{shared.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	controllertest.Start(t, env.Config, scheme, reg, func(r *controller.PoolCanaryReconciler) {
		r.Prometheus = clients
		r.MaxConcurrentReconciles = 4 // the chart's default
	})

	var nss []string
	for i := range namespaces {
		nss = append(nss, newNamespace(t, c, fmt.Sprintf("fleet-%d", i)))
	}
	for i := range canaries {
		pc := newCanary(nss[i%namespaces], fmt.Sprintf("shop-%d", i), "")
		pc.Spec.StepInterval = metav1.Duration{Duration: 10 * time.Minute} // every look an interim one
		pc.Spec.Analysis.Interval = metav1.Duration{Duration: interval}
		pc.Spec.Analysis.Statistical.Mode = v1alpha1.StatisticalCounts
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now()
	time.Sleep(run)
	sent, lists := requests.Load(), ruleLists.Load()

	lag := histogram(t, reg, "poolparity_canary_analysis_lag_seconds")
	analyses := lag.GetSampleCount()
	want := uint64(float64(canaries) * (run.Seconds() - interval.Seconds()) / interval.Seconds() * 0.8)
	p99 := quantileBound(lag, 0.99)
	t.Logf("%d canaries, a look every %s, %s: %d analyses (%.1f per canary per minute), lag p99 <= %.2fs, %d requests (%.1f per analysis), %d rule list reads",
		canaries, interval, time.Since(begin).Round(time.Second), analyses, float64(analyses)/float64(canaries)/time.Since(begin).Minutes(), p99, sent, float64(sent)/float64(max(analyses, 1)), lists)
	if analyses < want {
		t.Errorf("%d analyses, want at least %d (80%% of the looks due)", analyses, want)
	}
	if p99 > 4 {
		t.Errorf("lag p99 <= %.2fs, want within the 3.9s bucket", p99)
	}
	if maxLists := int64(run/promread.DefaultRulesTTL) + 2; lists > maxLists {
		t.Errorf("%d rule list reads in %s, want at most %d (one per endpoint per RulesTTL)", lists, run, maxLists)
	}
}

// histogram returns the histogram name of reg (one series).
func histogram(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no histogram %s", name)
	return nil
}

// quantileBound returns the smallest bucket bound of h at or above its q quantile (+Inf when
// only the +Inf bucket holds it).
func quantileBound(h *dto.Histogram, q float64) float64 {
	need := uint64(math.Ceil(q * float64(h.GetSampleCount())))
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() >= need {
			return b.GetUpperBound()
		}
	}
	return math.Inf(1)
}

package controller_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/controller"
	"github.com/poolparity/poolparity/internal/controller/controllertest"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/testenv"
)

// TestTenantsStayInTheirNamespace acts as a tenant bound only to the chart's PoolCanary edit
// (and view) roles in namespace A, against a real kube-apiserver and the controller wired as
// the binary wires it, with the endpoints a cluster admin lists: a good Prometheus, one that
// never answers and one that answers 50 MB. Each way out of namespace A, or of the listed
// endpoints, is refused at admission or by the controller with a condition naming the field,
// and no request reaches what it named; the slow and the huge Prometheus hold no other
// canary and do not blow the controller's heap.
func TestTenantsStayInTheirNamespace(t *testing.T) {
	scheme := testScheme(t)
	env := testenv.Start(t, testenv.WithScheme(scheme), testenv.WithCRDPaths(crdDir(t)))
	ctx := context.Background()
	c := env.Client

	good := newFakeProm(t, "good")
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm() // the server notices a closed connection only once the body is read
		select {          // never answers within any analysis' timeout
		case <-r.Context().Done():
		case <-time.After(2 * time.Minute):
		}
	}))
	t.Cleanup(hang.Close)
	// A second never-answering endpoint, for the hostile tenant's ten canaries alone.
	stalled := httptest.NewServer(hang.Config.Handler)
	t.Cleanup(stalled.Close)
	var hugeSent atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		chunk := strings.Repeat(`{"metric":{"gray_status":"true"},"value":[1,"1"]},`, 1000)
		for range 1000 { // about 50 MB
			n, err := io.WriteString(w, chunk)
			hugeSent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(huge.Close)
	var unlistedHits atomic.Int32
	unlisted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		unlistedHits.Add(1)
		http.Error(w, "SECRET_TOKEN=hunter2", http.StatusForbidden)
	}))
	t.Cleanup(unlisted.Close)

	endpoints, err := promread.NewClients([]string{good.srv.URL, hang.URL, huge.URL, stalled.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Start(t, env.Config, scheme, prometheus.NewRegistry(), func(r *controller.PoolCanaryReconciler) {
		r.Prometheus = endpoints
		r.MaxConcurrentReconciles = 2 // the binary's default is 4: hold the controller to less
	})

	nsA, nsB := newNamespace(t, c, "tenant-a"), newNamespace(t, c, "tenant-b")
	tenant := tenantClient(ctx, t, env.Config, c, nsA)

	t.Run("the tenant can only act in its own namespace", func(t *testing.T) {
		pc := newCanary(nsB, "shop", good.srv.URL)
		if err := tenant.Create(ctx, pc); !testenv.IsForbidden(err) {
			t.Errorf("creating a canary in namespace B: %v, want Forbidden", err)
		}
	})

	t.Run("an injected label name is refused at admission", func(t *testing.T) {
		pc := newCanary(nsA, "inject", good.srv.URL)
		pc.Spec.Analysis.MatchLabels = map[string]string{`c="d"} or label_replace(victim_revenue_eur_total{namespace="victim"}, "gray_status", "true", "", "") or x{c`: "v"}
		if err := tenant.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "label names are letters") {
			t.Errorf("got %v, want the label-name rule", err)
		}
		pc = newCanary(nsA, "inject", good.srv.URL)
		pc.Spec.Analysis.SLIs[0].MatchLabels = map[string]string{`a"}`: "v"}
		if err := tenant.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), "label names are letters") {
			t.Errorf("an SLI's matchLabels: got %v, want the label-name rule", err)
		}
	})

	t.Run("a timeout of 0s and an unbounded interval are refused at admission", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			set  func(*v1alpha1.Analysis)
			want string
		}{
			{"timeout 0s", func(a *v1alpha1.Analysis) { a.Timeout = metav1.Duration{} }, "timeout must be between 1s and 60s"},
			{"timeout 10m", func(a *v1alpha1.Analysis) { a.Timeout = metav1.Duration{Duration: 10 * time.Minute} }, "timeout must be between 1s and 60s"},
			{"interval 0s", func(a *v1alpha1.Analysis) { a.Interval = metav1.Duration{} }, "interval must be between 1s and 1h"},
		} {
			pc := newCanary(nsA, "bounds", good.srv.URL)
			tc.set(&pc.Spec.Analysis)
			// A zero metav1.Duration is sent as "0s", which the defaulting does not replace.
			if err := tenant.Create(ctx, pc); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
			}
		}
	})

	t.Run("matchLabels naming namespace B is refused, and every query sent carries namespace A", func(t *testing.T) {
		pc := newCanary(nsA, "widen", good.srv.URL)
		pc.Spec.Analysis.MatchLabels = map[string]string{"namespace": nsB, "job": "poolparity"}
		if err := tenant.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitRefused(ctx, t, c, nsA, "widen", "spec.analysis.matchLabels.namespace")
		ok := newCanary(nsA, "own", good.srv.URL)
		if err := tenant.Create(ctx, ok); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the tenant's own canary promoted", func() (bool, string) {
			cur := getCanary(ctx, t, c, nsA, "own")
			return cur.Status.Phase == v1alpha1.PhasePromoted, string(cur.Status.Phase)
		})
		sent := good.sentQueries()
		if len(sent) == 0 {
			t.Fatal("no query reached the Prometheus")
		}
		for _, q := range sent {
			if strings.Contains(q, nsB) || !strings.Contains(q, `namespace="`+nsA+`"`) {
				t.Errorf("query %q is not pinned to namespace %s", q, nsA)
			}
		}
	})

	t.Run("an endpoint the admin did not list is refused and never called", func(t *testing.T) {
		pc := newCanary(nsA, "elsewhere", unlisted.URL)
		if err := tenant.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		cond := waitRefused(ctx, t, c, nsA, "elsewhere", "spec.analysis.prometheusURL")
		if strings.Contains(cond.Message, "SECRET") {
			t.Errorf("the condition shows the endpoint's answer: %q", cond.Message)
		}
		if n := unlistedHits.Load(); n != 0 {
			t.Errorf("%d requests reached the unlisted endpoint", n)
		}
	})

	t.Run("a never-answering and a 50 MB Prometheus hold no other canary and do not blow the heap", func(t *testing.T) {
		nsC := newNamespace(t, c, "tenant-c")
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		slow := newCanary(nsC, "slow", hang.URL)
		slow.Spec.Analysis.Timeout = metav1.Duration{Duration: 3 * time.Second}
		big := newCanary(nsC, "big", huge.URL)
		for _, pc := range []*v1alpha1.PoolCanary{slow, big} {
			if err := c.Create(ctx, pc); err != nil {
				t.Fatal(err)
			}
		}
		// Its first read is the rule list's, refused at the answer's first field (a rule list
		// holds groups, not a query's result); a query would be refused at the size cap.
		waitFor(t, 30*time.Second, "the 50 MB answer refused", func() (bool, string) {
			la := getCanary(ctx, t, c, nsC, "big").Status.LastAnalysis
			return la != nil && la.Verdict == v1alpha1.VerdictError && (strings.Contains(la.Message, "response-size cap") || strings.Contains(la.Message, "not a rule list")), fmt.Sprintf("%+v", la)
		})
		waitFor(t, 30*time.Second, "the never-answering Prometheus' analysis ended by its timeout", func() (bool, string) {
			la := getCanary(ctx, t, c, nsC, "slow").Status.LastAnalysis
			return la != nil && la.Verdict == v1alpha1.VerdictError, fmt.Sprintf("%+v", la)
		})
		// Both keep a worker busy from now on, every interval; the tenant's new canary must
		// still be analysed at every step and promoted, as it is alone.
		begin := time.Now()
		pc := newCanary(nsA, "ontime", good.srv.URL)
		if err := tenant.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 40*time.Second, "the tenant's canary promoted beside the slow and the huge one", func() (bool, string) {
			cur := getCanary(ctx, t, c, nsA, "ontime")
			return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
		})
		t.Logf("promoted in %s beside them (three 1s steps)", time.Since(begin).Round(time.Millisecond))
		if st := getCanary(ctx, t, c, nsC, "slow").Status; st.Phase != v1alpha1.PhaseProgressing || st.CurrentWeight != 10 {
			t.Errorf("the slow canary moved: phase %s, weight %d; want it held at its first step", st.Phase, st.CurrentWeight)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		grew := int64(after.HeapInuse) - int64(before.HeapInuse)
		t.Logf("heap in use %d MiB -> %d MiB; the huge endpoint sent %d MiB in all", before.HeapInuse>>20, after.HeapInuse>>20, hugeSent.Load()>>20)
		if grew > 64<<20 {
			t.Errorf("heap in use grew by %d MiB (the chart's memory limit is 256Mi)", grew>>20)
		}
	})

	t.Run("ten canaries on a stalled endpoint with 60s timeouts do not delay another tenant's", func(t *testing.T) {
		hostileEndpoint(ctx, t, c, tenant, nsA, good.srv.URL, stalled.URL)
	})
}

// hostileEndpoint creates ten canaries in a hostile tenant's namespace on stalledURL, an
// allowed endpoint that never answers, each with the schema's longest timeout (60s), and then
// one of tenant's on goodURL: with two workers, that canary is promoted (three 1s steps) in
// about the time it takes alone, because the endpoint's guard lets one request at a time
// wait on a stalled endpoint and fails the others at once; the hostile canaries hold their
// first step with a message naming the endpoint. Without the guard, each hostile analysis
// held a worker for its timeout.
func hostileEndpoint(ctx context.Context, t *testing.T, c, tenant client.Client, nsA, goodURL, stalledURL string) {
	nsH := newNamespace(t, c, "hostile")
	for i := range 10 {
		pc := newCanary(nsH, fmt.Sprintf("stall-%d", i), stalledURL)
		pc.Spec.Analysis.Timeout = metav1.Duration{Duration: time.Minute}
		if err := c.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the hostile canaries reach the workers first
	begin := time.Now()
	pc := newCanary(nsA, "beside-hostile", goodURL)
	if err := tenant.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the tenant's canary promoted beside ten canaries on a stalled endpoint", func() (bool, string) {
		cur := getCanary(ctx, t, c, nsA, "beside-hostile")
		return cur.Status.Phase == v1alpha1.PhasePromoted, fmt.Sprintf("phase %s, weight %d", cur.Status.Phase, cur.Status.CurrentWeight)
	})
	took := time.Since(begin)
	t.Logf("promoted in %s beside ten canaries on a never-answering endpoint (three 1s steps)", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("promoted after %s, want within 20s: the stalled endpoint held the workers", took.Round(time.Second))
	}
	held := 0
	for i := range 10 {
		st := getCanary(ctx, t, c, nsH, fmt.Sprintf("stall-%d", i)).Status
		if st.Phase != v1alpha1.PhaseProgressing || st.CurrentWeight != 10 {
			t.Errorf("hostile canary %d moved: phase %s, weight %d", i, st.Phase, st.CurrentWeight)
		}
		if la := st.LastAnalysis; la != nil && la.Verdict == v1alpha1.VerdictError && strings.Contains(la.Message, promread.ErrEndpointUnavailable.Error()) && strings.Contains(la.Message, stalledURL) {
			held++
		}
	}
	if held < 8 {
		t.Errorf("%d of 10 hostile canaries hold with the endpoint named unavailable, want at least 8 (one may still wait on its request)", held)
	}
}

// tenantClient binds the user tenant-a to the chart's PoolCanary view and edit ClusterRoles in
// namespace ns only, and returns a client that acts as that user.
func tenantClient(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client, ns string) client.Client {
	t.Helper()
	objs, err := deploytest.Decode(deploytest.HelmTemplate(t, render.ValueSet{Name: "controller"}, "--set", "controller.enabled=true"))
	if err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, o := range objs {
		name := o.GetName()
		if o.GetKind() != "ClusterRole" || !(strings.HasSuffix(name, "-poolcanary-edit") || strings.HasSuffix(name, "-poolcanary-view")) {
			continue
		}
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating the chart's ClusterRole %s: %v", name, err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-a-" + name, Namespace: ns},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant-a"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		}
		if err := admin.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
		bound++
	}
	if bound != 2 {
		t.Fatalf("bound %d of the chart's PoolCanary user roles, want view and edit", bound)
	}
	tc := rest.CopyConfig(cfg)
	tc.Impersonate = rest.ImpersonationConfig{UserName: "tenant-a"}
	c, err := client.New(tc, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitRefused waits for the canary's Parity condition to say AnalysisRefused naming field,
// and returns it.
func waitRefused(ctx context.Context, t *testing.T, c client.Client, ns, name, field string) metav1.Condition {
	t.Helper()
	return waitFor(t, 20*time.Second, "Parity AnalysisRefused naming "+field, func() (bool, metav1.Condition) {
		cur := getCanary(ctx, t, c, ns, name)
		cond := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionParity)
		if cond == nil {
			return false, metav1.Condition{}
		}
		return cond.Reason == controller.ReasonAnalysisRefused && strings.Contains(cond.Message, field), *cond
	})
}

package steps

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/internal/catalog"
)

// TestCanaryManifest renders images/canary.yaml as the canary step does and decodes its
// PoolCanary strictly (a misspelt field fails here, not 30 minutes into a kind run): the kind
// run's canaries use the count-based judge with a warm-up (issues 27 and 37) on SLIs it judges
// from the count rules (a sampleRule would put an SLI back on the per-minute test), values-test.yaml
// records those rules, and the stepInterval is the one the controller faults assume.
func TestCanaryManifest(t *testing.T) {
	env := harness.NewEnv(harness.Config{Namespace: "poolparity", Release: "poolparity"}, io.Discard)
	c := canarySpec{name: "canary-pooled", stable: "unpooled", gray: "pooled", steps: []int{25, 50}}
	var y bytes.Buffer
	for _, f := range []string{"canary-scrape.yaml", "canary.yaml"} {
		b, err := renderCanary(env, f, c)
		if err != nil {
			t.Fatal(err)
		}
		y.WriteString("\n---\n")
		y.Write(b)
	}
	var pc *v1alpha1.PoolCanary
	for doc := range strings.SplitSeq(y.String(), "\n---\n") {
		if strings.Contains(doc, "kind: PoolCanary") {
			pc = new(v1alpha1.PoolCanary)
			if err := yaml.UnmarshalStrict([]byte(doc), pc); err != nil {
				t.Fatalf("decoding the PoolCanary strictly: %v", err)
			}
		}
	}
	if pc == nil {
		t.Fatal("no PoolCanary in images/canary.yaml")
	}
	if tr := pc.Spec.TrafficRouting; tr == nil || tr.GatewayAPI.HTTPRoute != "canary-pooled" {
		t.Errorf("trafficRouting %+v, want the canary's own HTTPRoute", tr)
	}
	values, err := os.ReadFile("../values-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vt struct {
		Rules struct {
			Counts struct {
				Enabled *bool `json:"enabled"`
			} `json:"counts"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal(values, &vt); err != nil {
		t.Fatal(err)
	}
	a := pc.Spec.Analysis
	if a.Statistical.Mode != v1alpha1.StatisticalCounts {
		t.Errorf("statistical.mode %q, want Counts", a.Statistical.Mode)
	}
	if a.Warmup == nil || a.Warmup.Duration <= 0 {
		t.Errorf("analysis.warmup %v, want a warm-up", a.Warmup)
	}
	if pc.Spec.StepInterval.Duration != canaryStepInterval {
		t.Errorf("stepInterval %s, want canaryStepInterval %s", pc.Spec.StepInterval.Duration, canaryStepInterval)
	}
	for _, sli := range a.SLIs {
		if sli.SampleRule != "" {
			t.Errorf("SLI %s has sampleRule %q: it would be judged by the per-minute test, not the count-based one", sli.Name, sli.SampleRule)
		}
		if s, ok := catalog.Default().Get(catalog.ID(sli.Name)); !ok || s.Counts == nil {
			t.Errorf("SLI %s has no count inputs in the catalog: the count-based test cannot judge it", sli.Name)
		}
	}
	if c := vt.Rules.Counts.Enabled; c != nil && !*c {
		t.Error("values-test.yaml turns rules.counts off: the count-based test would have no counters to read")
	}
	if len(a.SLIs) == 0 || a.Statistical.Step.Duration != 20*time.Second {
		t.Errorf("%d SLIs at step %s, want SLIs sampled every 20s", len(a.SLIs), a.Statistical.Step.Duration)
	}
}

func TestCheckRouteHistory(t *testing.T) {
	hist := func(routes ...int32) CanaryRun {
		r := CanaryRun{Name: "c", Phase: "Promoted"}
		for _, w := range routes {
			r.History = append(r.History, canaryPoint{Route: w})
		}
		return r
	}
	tests := []struct {
		name         string
		run          CanaryRun
		stable, gray int64
		want         string
	}{
		{"every step, then all on stable", hist(-1, 0, 25, 50, 0), 100, 0, ""},
		{"a step never on the route", hist(0, 25, 0), 100, 0, "never carried the weight of step 50%"},
		{"left on gray", hist(0, 25, 50), 50, 50, "route at stable 50, gray 50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkRouteHistory(tt.run, []int{25, 50}, tt.stable, tt.gray)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("checkRouteHistory = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCanaryTableNamesTheJudge: the report gives each canary's last word from the judge, so a
// canary that stalled says why (an allowance that made a PASS impossible, too few steps).
func TestCanaryTableNamesTheJudge(t *testing.T) {
	r := CanaryResult{Canary: []CanaryRun{
		{Name: "stalled", Phase: "Progressing", Want: "Promoted", Judge: "heap alloc per request: NO DATA: PASS impossible"},
		{Name: "quiet", Phase: "Promoted", Want: "Promoted", OK: true},
	}}
	got := r.Table(nil)
	if !strings.Contains(got, "   judge: heap alloc per request: NO DATA: PASS impossible\n") {
		t.Errorf("the table does not give the stalled canary's judge message:\n%s", got)
	}
	if strings.Count(got, "judge:") != 1 {
		t.Errorf("want one judge line (none for a canary without a message):\n%s", got)
	}
}

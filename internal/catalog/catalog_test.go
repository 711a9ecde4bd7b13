package catalog_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/internal/catalog"
)

func TestDefaultIsValid(t *testing.T) {
	if err := catalog.Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesEveryBadSLI(t *testing.T) {
	tests := []struct {
		name   string
		change func(*catalog.Catalog)
		want   string
	}{
		{"an ID with capitals", func(c *catalog.Catalog) { c.SLIs[0].ID = "Latency" }, "lower-case words"},
		{"a repeated ID", func(c *catalog.Catalog) { c.SLIs[1].ID = c.SLIs[0].ID }, "the ID repeats"},
		{"a repeated display name", func(c *catalog.Catalog) { c.SLIs[1].Name = c.SLIs[0].Name }, "display name is empty or repeats"},
		{"an unknown comparison", func(c *catalog.Catalog) { c.SLIs[2].Comparison = "ratio<" }, `unknown comparison "ratio<"`},
		{"a negative floor", func(c *catalog.Catalog) { c.SLIs[2].Floor = -0.1 }, "the floor is negative"},
		{"a relative floor of 100%", func(c *catalog.Catalog) { c.SLIs[0].RelFloor = 1 }, "relative floor is outside [0, 1)"},
		{"a sequential alpha of 0", func(c *catalog.Catalog) { c.Stat.SequentialAlpha = 0 }, "statistical defaults out of range"},
		{"a rule that is no metric name", func(c *catalog.Catalog) { c.SLIs[3].Rule = "rate(x[5m])" }, "is not a metric name"},
		{"an alert without its values key", func(c *catalog.Catalog) { c.SLIs[0].Alert = &catalog.Alert{Name: "X"} }, "needs its name and values key"},
		{"a confidence of 1", func(c *catalog.Catalog) { c.Stat.Confidence = 1 }, "statistical defaults out of range"},
		{"no request rule", func(c *catalog.Catalog) { c.Guard.RequestRule = "" }, "guard defaults out of range"},
		{"an unknown Judged", func(c *catalog.Catalog) { c.SLIs[0].Judged = "sometimes" }, `unknown Judged "sometimes"`},
		{"when-present without a presence metric", func(c *catalog.Catalog) { c.SLIs[0].Judged = catalog.WhenPresent }, `needs a Presence metric name, got ""`},
		{"a presence metric on an SLI always judged", func(c *catalog.Catalog) { c.SLIs[0].Presence = "x_total" }, `Presence "x_total" is only read for Judged when-present`},
		{"a count rule on a ratio SLI", func(c *catalog.Catalog) { c.SLIs[0].CountRule = "x:requests:rate" }, "a CountRule (a proportion) needs a difference comparison"},
		{"a count rule that is not a metric name", func(c *catalog.Catalog) { c.SLIs[2].CountRule = "x y" }, `rule "x y" is not a metric name`},
		{"a negative rule interval", func(c *catalog.Catalog) { c.Stat.RuleInterval = -time.Second }, "statistical defaults out of range"},
		{"a NaN confidence", func(c *catalog.Catalog) { c.Stat.Confidence = math.NaN() }, "statistical defaults out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := catalog.Default()
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSelectAndWithThresholdCopy(t *testing.T) {
	d := catalog.Default()
	c, err := d.Select(catalog.LatencyP99, catalog.ErrorRatio)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.IDs()); got != "[latency-p99 error-ratio]" {
		t.Errorf("Select kept %s", got)
	}
	if _, err := d.Select("p99"); !errors.Is(err, catalog.ErrUnknownSLI) || !strings.Contains(err.Error(), "latency-p99") {
		t.Errorf("Select of an unknown ID: %v, want ErrUnknownSLI naming the valid ones", err)
	}
	c2, err := d.WithThreshold(catalog.CPUPerRequest, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c2.Get(catalog.CPUPerRequest)
	orig, _ := d.Get(catalog.CPUPerRequest)
	if s.Threshold != 1.5 || orig.Threshold == 1.5 {
		t.Errorf("WithThreshold: copy %v, original %v; want 1.5 in the copy only", s.Threshold, orig.Threshold)
	}
}

// TestWithThresholdRefusesAnInfiniteMargin: a ratio limit of 0 (once admitted from a
// PoolCanary's maxRatio: "0", whose margin became +Inf and passed a +20% gray) or below, and a
// threshold that is not finite, are errors naming the SLI; a delta limit may be 0 or negative.
func TestWithThresholdRefusesAnInfiniteMargin(t *testing.T) {
	d := catalog.Default()
	tests := []struct {
		id      catalog.ID
		t       float64
		wantErr string
	}{
		{catalog.CPUPerRequest, 0, "must be above 0"},
		{catalog.CPUPerRequest, -1.2, "must be above 0"},
		{"latency-p99", math.NaN(), "not finite"},
		{catalog.ErrorRatio, math.Inf(1), "not finite"},
		{catalog.CPUPerRequest, 0.9, ""},
		{catalog.ErrorRatio, 0, ""},
		{catalog.RedisPoolHitRatio, -0.2, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%g", tt.id, tt.t), func(t *testing.T) {
			c, err := d.WithThreshold(tt.id, tt.t)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Validate(); err != nil {
					t.Errorf("Validate after WithThreshold: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), string(tt.id)) {
				t.Errorf("WithThreshold(%s, %g): %v, want an error naming the SLI and %q", tt.id, tt.t, err, tt.wantErr)
			}
			bad := d
			bad.SLIs = slices.Clone(d.SLIs)
			for i := range bad.SLIs {
				if bad.SLIs[i].ID == tt.id {
					bad.SLIs[i].Threshold = tt.t
				}
			}
			if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate of a catalog holding %s=%g: %v, want %q", tt.id, tt.t, err, tt.wantErr)
			}
		})
	}
}

func TestQuery(t *testing.T) {
	d := catalog.Default()
	p99, _ := d.Get(catalog.LatencyP99)
	if got, want := p99.Query("5m", `job="a"`), `job_gray_status:http_request_duration_seconds:p99_rate5m{job="a"}`; got != want {
		t.Errorf("Query = %s, want %s", got, want)
	}
	hits, _ := d.Get(catalog.SyncPoolHitRatio)
	want := `sum by (gray_status) (job_gray_status_pool:syncpool_hits:ratio_rate1m{} * job_gray_status_pool:syncpool_gets:rate1m{}) / sum by (gray_status) (job_gray_status_pool:syncpool_gets:rate1m{})`
	if got := hits.Query("1m", ""); got != want {
		t.Errorf("weighted Query = %s\nwant %s", got, want)
	}
}

func ExampleCatalog_Select() {
	c, err := catalog.Default().Select(catalog.LatencyP99, catalog.CPUPerRequest)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range c.SLIs {
		fmt.Printf("%s: %s %s %.2f, reads %s\n", s.ID, s.Name, s.Comparison, s.Threshold, s.TrackRule(c.Window))
	}
	// Output:
	// latency-p99: latency p99 ratio<= 1.10, reads job_gray_status:http_request_duration_seconds:p99_rate5m
	// cpu-per-request: CPU per request ratio<= 1.15, reads job_gray_status:process_cpu_seconds_per_request:ratio_rate5m
}

// rulesFile is the shape of the committed rules file the tests read.
type rulesFile struct {
	Groups []struct {
		Rules []struct {
			Record string `json:"record"`
			Alert  string `json:"alert"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// readRules reads deploy/prometheus/poolparity.rules.yml, the chart's rules with its values.
func readRules(t *testing.T) rulesFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "poolparity.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f rulesFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTheRulesRecordWhatTheCatalogReads fails when a rule the catalog names (per-track and
// weight rules of both window families, parity and floor rules, the guard's rules) is not
// recorded by the committed rules file, or the alerts it names (Alerts) are not the ones defined
// there.
func TestTheRulesRecordWhatTheCatalogReads(t *testing.T) {
	f := readRules(t)
	have := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			have[r.Record], have[r.Alert] = true, true
		}
	}
	c := catalog.Default()
	var alerts []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !slices.Contains(alerts, r.Alert) {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	if got, want := slices.Sorted(slices.Values(c.Alerts())), slices.Sorted(slices.Values(alerts)); !slices.Equal(got, want) {
		t.Errorf("the catalog names the alerts %v, the rules define %v: they must be the same", got, want)
	}
	for _, w := range []string{"5m", "1m"} {
		want := []string{c.Guard.RequestRule + w, c.Guard.MinTrackRule + w}
		for _, s := range c.SLIs {
			want = append(want, s.Rules(w)...)
			for _, r := range []string{s.ParityRule, s.FloorRule} {
				if r != "" {
					want = append(want, r+w)
				}
			}
			if s.Alert != nil && !have[s.Alert.Name] {
				t.Errorf("%s: alert %s is not defined in the rules", s.ID, s.Alert.Name)
			}
		}
		for _, r := range want {
			if !have[r] {
				t.Errorf("the catalog reads %s, which the rules do not record", r)
			}
		}
	}
}

// TestEveryFloorAlertFiresOnlyBeyondItsRowsFloor fails when the alert of a ratio SLI does not
// read its row's floor, max(Floor, RelFloor x stable), with the catalog's numbers (written into
// values.yaml by hack/gen and rendered into the committed rules file): the alert would fire on data
// whose row passes within its floor.
func TestEveryFloorAlertFiresOnlyBeyondItsRowsFloor(t *testing.T) {
	f := readRules(t)
	c := catalog.Default()
	w := c.Window
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, s := range c.SLIs {
		if s.Alert == nil || s.Comparison != catalog.RatioAtMost {
			continue
		}
		if s.FloorRule == "" {
			t.Errorf("%s: a ratio SLI with an alert needs a FloorRule, or its alert fires within the row's floor", s.ID)
			continue
		}
		var expr string
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == s.Alert.Name && strings.Contains(r.Expr, s.ParityRule+w+" >") {
					expr = r.Expr
				}
			}
		}
		want := []string{s.ParityRule + w + " > " + num(s.Threshold), s.FloorRule + w + " > " + num(s.Floor)}
		if s.RelFloor > 0 {
			want = append(want, s.FloorRule+w+" > ignoring (gray_status) "+num(s.RelFloor)+" * "+s.Rule+w+`{gray_status="false"}`)
		}
		for _, part := range want {
			if !strings.Contains(expr, part) {
				t.Errorf("%s: alert %s's expr %q lacks %q", s.ID, s.Alert.Name, expr, part)
			}
		}
	}
}

func TestFloorAtScalesWithTheBaseline(t *testing.T) {
	d := catalog.Default()
	p99, _ := d.Get(catalog.LatencyP99)
	cpu, _ := d.Get(catalog.CPUPerRequest)
	tests := []struct {
		name   string
		sli    catalog.SLI
		stable float64
		want   float64
	}{
		{"a fast service keeps the 5 ms floor", p99, 0.020, 0.005},
		{"a slow service gets 5% of stable's p99", p99, 0.400, 0.020},
		{"a negative level counts by its size", p99, -0.400, 0.020},
		{"an infinite level keeps the absolute floor", p99, math.Inf(1), 0.005},
		{"CPU per request is absolute", cpu, 0.5, 0.0001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sli.FloorAt(tt.stable); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("FloorAt(%v) = %v, want %v", tt.stable, got, tt.want)
			}
		})
	}
	for _, s := range d.SLIs {
		if s.Floor <= 0 {
			t.Errorf("%s has no absolute floor: every SLI needs one (issue 27)", s.ID)
		}
		if !strings.Contains(s.Doc, "floor") {
			t.Errorf("%s: its Doc does not state its floor", s.ID)
		}
	}
}

func ExampleSLI_FloorAt() {
	p99, _ := catalog.Default().Get(catalog.LatencyP99)
	fmt.Printf("stable p99 40 ms: floor %.1f ms; 200 ms: floor %.1f ms\n", 1000*p99.FloorAt(0.040), 1000*p99.FloorAt(0.200))
	// Output:
	// stable p99 40 ms: floor 5.0 ms; 200 ms: floor 10.0 ms
}

func TestAlertValuesCarryTheRowsFloor(t *testing.T) {
	got := map[string]catalog.AlertValue{}
	for _, a := range catalog.Default().AlertValues() {
		got[a.Key] = a
	}
	tests := []struct {
		key             string
		hasFloor        bool
		floor, relFloor float64
	}{
		{"latencyRegression", true, 0.005, 0.05},
		{"cpuPerRequestRegression", true, 0.0001, 0},
		{"responseSizeRegression", true, 64, 0.10},
		{"errorRegression", false, 0, 0},
		{"lowSyncPoolHitRatio", false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			a, ok := got[tt.key]
			if !ok || a.HasFloor != tt.hasFloor || a.Floor != tt.floor || a.RelFloor != tt.relFloor {
				t.Errorf("%+v (found %v), want floor %v: %v and %v", a, ok, tt.hasFloor, tt.floor, tt.relFloor)
			}
		})
	}
}

// TestFaultAlerts: the alerts that fail every gate are alerting rules of the catalog that raise
// no SLI (an SLI's alert is what a statistical gate's test stands in for).
func TestFaultAlerts(t *testing.T) {
	cat := catalog.Default()
	all := cat.Alerts()
	for name := range catalog.FaultAlerts() {
		if !slices.Contains(all, name) {
			t.Errorf("fault alert %s is not among the catalog's alerts %v", name, all)
		}
		for _, s := range cat.SLIs {
			if s.Alert != nil && s.Alert.Name == name {
				t.Errorf("fault alert %s raises the SLI %s", name, s.ID)
			}
		}
	}
}

// Package scenario is the one list of poolparity's scenarios: what each one
// runs on the gray track (its pool mode, its injected fault) and what the
// parity report must then say (the verdict, and the alerts that name its
// cause). The local demo (internal/demo) and the kind harness (hack/kindrun)
// both read it, so a scenario means the same thing in both.
//
// The stable track is always the baseline: unpooled, no fault.
package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/pools"
)

// Scenario names. They are the demo's SCENARIO values and the kind run's
// scenario names.
const (
	// Good runs a pooled gray track against an unpooled stable one.
	Good = "good"
	// Regression adds FaultLatency to every API request of the pooled gray
	// track.
	Regression = "regression"
	// AA runs both tracks unpooled: an A/A test of the comparison.
	AA = "aa"
	// MisuseHold runs the gray track with POOL_MODE=misuse-hold: pooled
	// objects taken when a request arrives and held to its end.
	MisuseHold = string(pools.ModeMisuseHold)
	// MisuseReset runs the gray track with POOL_MODE=misuse-reset: buffers
	// pre-sized to the largest request and zeroed on every Put.
	MisuseReset = string(pools.ModeMisuseReset)
	// MisuseRetain runs the gray track with POOL_MODE=misuse-retain (no size
	// cap), under a load where one PUT in 16 is large.
	MisuseRetain = string(pools.ModeMisuseRetain)
	// MisuseDirty runs the gray track with POOL_MODE=misuse-dirty: a reset
	// that forgets the decoded item, caught by the pool sanitizer.
	MisuseDirty = string(pools.ModeMisuseDirty)
	// MisuseCap runs the example service's gray track with
	// POOL_MODE=misuse-cap: an image pool whose New makes the largest image
	// and whose size cap drops anything over a quarter of it, so every Put
	// is dropped and every Get allocates (examples/imagesvc).
	MisuseCap = "misuse-cap"
)

// The services a scenario runs on: the demo's SERVICE values.
const (
	// ServiceReference is the reference service, app/cmd/poolparity.
	ServiceReference = "poolparity"
	// ServiceExample is the example service of another shape,
	// examples/imagesvc: thumbnails, no Redis, OpenTelemetry names.
	ServiceExample = "example"
)

// Services lists the services, the reference one first.
var Services = []string{ServiceReference, ServiceExample}

// ExampleLoadPath is the example service's load, a path template for the
// load generator (loadgen.ParsePath; poolparity-load -get): GET
// /thumbnail/{id}?w=N over the load's key space, mostly small thumbnails and
// one in ten 256 pixels a side.
const ExampleLoadPath = "/thumbnail/img-{key}?w={32|32|64|64|64|64|128|128|128|256}"

// Pool modes of a track (the service's POOL_MODE); the misuse scenarios'
// gray mode is their name.
const (
	Pooled   = string(pools.ModePooled)
	Unpooled = string(pools.ModeUnpooled)
)

// FaultLatency is the latency the regression scenario adds to every API
// request of the gray track (the service's FAULT_LATENCY).
const FaultLatency = 40 * time.Millisecond

// LatencyAlert is the alert that names the regression scenario's cause: the
// catalog's alert of the latency SLIs.
var LatencyAlert = catalog.Default().AlertOf(catalog.LatencyP99)

// Scenario is one scenario: the gray track's settings and the expected
// outcome. The stable track runs StableMode with no fault.
type Scenario struct {
	// Name is one of the constants above.
	Name string
	// StableMode and GrayMode are the tracks' POOL_MODE.
	StableMode, GrayMode string
	// FaultLatency is added to every API request of the gray track (zero:
	// none).
	FaultLatency time.Duration
	// Want is the verdict the parity report must give.
	Want parity.Verdict
	// Alerts name the scenario's cause: at least one of them must fire.
	// Empty means no alert names a cause, and none may fire.
	Alerts []string
	// Services are the services it runs on; nil means the reference
	// service only.
	Services []string
}

// RunsOn reports whether the scenario runs on service.
func (s Scenario) RunsOn(service string) bool {
	if s.Services == nil {
		return service == ServiceReference
	}
	return slices.Contains(s.Services, service)
}

// NamesFor returns the names of the scenarios that run on service, in All's
// order.
func NamesFor(service string) []string {
	var names []string
	for _, s := range All() {
		if s.RunsOn(service) {
			names = append(names, s.Name)
		}
	}
	return names
}

// All returns every scenario, in the order the demo lists them.
func All() []Scenario {
	cat := catalog.Default()
	hitRatio, cpu := cat.AlertOf(catalog.SyncPoolHitRatio), cat.AlertOf(catalog.CPUPerRequest)
	misuse := func(name string, alerts ...string) Scenario {
		return Scenario{Name: name, StableMode: Unpooled, GrayMode: name, Want: parity.Fail, Alerts: alerts}
	}
	return []Scenario{
		{Name: Good, StableMode: Unpooled, GrayMode: Pooled, Want: parity.Pass, Services: Services},
		{Name: Regression, StableMode: Unpooled, GrayMode: Pooled, FaultLatency: FaultLatency, Want: parity.Fail, Alerts: []string{LatencyAlert}},
		{Name: AA, StableMode: Unpooled, GrayMode: Unpooled, Want: parity.Pass, Services: Services},
		// Hold is caught by memory as well: a request that holds one item
		// scratch per item makes its pool keep that many, each grown by the
		// largest item it served, while sync.Pool refills too fast for the
		// hit ratio to fall under steady load (docs/pool-misuse.md).
		misuse(MisuseHold, hitRatio, catalog.AlertNoAllocationGain, catalog.AlertLiveHeapRegression),
		misuse(MisuseReset, cpu, LatencyAlert, catalog.AlertLiveHeapRegression),
		misuse(MisuseRetain, catalog.AlertLiveHeapRegression),
		misuse(MisuseDirty, catalog.AlertDirtyObjects),
		// Every image is dropped at Put: the image pool's hit ratio is 0.
		// Each request then allocates the largest image, which
		// PoolParityNoAllocationGain (informational) may name as well.
		func() Scenario {
			s := misuse(MisuseCap, hitRatio)
			s.Services = []string{ServiceExample}
			return s
		}(),
	}
}

// Names returns the scenario names of every service, in All's order.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return names
}

// Lookup returns the scenario named name.
func Lookup(name string) (Scenario, error) {
	for _, s := range All() {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (scenarios: %s)", name, strings.Join(Names(), ", "))
}

// IsMisuse reports whether the scenario runs a pool misuse on the gray
// track (its gray mode is its name).
func (s Scenario) IsMisuse() bool { return s.GrayMode == s.Name }

// GrayEnv returns the gray track's environment beyond its POOL_MODE: the
// injected fault, as NAME=value.
func (s Scenario) GrayEnv() []string {
	if s.FaultLatency > 0 {
		return []string{"FAULT_LATENCY=" + s.FaultLatency.String()}
	}
	return nil
}

// AlertsMet reports whether the firing alerts are what the scenario
// expects: one of Alerts among them, or, when Alerts is empty, none.
func (s Scenario) AlertsMet(firing []string) bool {
	if len(s.Alerts) == 0 {
		return len(firing) == 0
	}
	return slices.ContainsFunc(s.Alerts, func(a string) bool { return slices.Contains(firing, a) })
}

// Met reports whether a verdict and the firing alerts are what the
// scenario expects.
func (s Scenario) Met(verdict parity.Verdict, firing []string) bool {
	return verdict == s.Want && s.AlertsMet(firing)
}

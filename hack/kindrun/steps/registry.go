// Package steps holds the steps of a kind run that work on the cluster once it is up: the
// dependencies (Prometheus, metrics-server, the Gateway, KEDA), the chart, the scenarios, the
// example service, Flagger's Canaries and Argo's Rollout, the weighted route, chaos, the
// PoolCanaries and the HPA groups; and the
// registry of every step (Defs), the cluster's and the images' included.
package steps

import (
	"github.com/poolparity/poolparity/hack/kindrun/cluster"
	"github.com/poolparity/poolparity/hack/kindrun/harness"
	"github.com/poolparity/poolparity/hack/kindrun/images"
)

// Defs are every step of the harness, in the order `all` runs them, then those run only by name.
// A new step is one file (its type and its Def) and one line here.
//
// The steps of one Beside group run together: each works in its own namespace (or
// on the chart's release while the others keep off it), none injects faults into what the
// others read (Prometheus, the Gateway), and each waits mostly on the cluster's clock.
func Defs() []harness.Def {
	return []harness.Def{
		cluster.EngineDef(), images.Def(), cluster.UpDef(), cluster.LoadDef(), depsDef(), installDef(),
		scenariosDef(), flaggerDef(), argoDef(), routingDef(), exampleDef(), chaosDef(), canaryDef(), hpaGroupsDef(),
		cluster.DownDef(),
		// Run only by name.
		loadDef(), parityDef(), hpaGroupsFullDef(),
	}
}

// SideBySide is the Beside group of the steps that run together first: the scenarios on the
// chart's release, and beside them Flagger's Canaries and Argo's Rollout, each in namespaces of
// its own, which their steps delete at their end.
const SideBySide = "side-by-side"

// BesideRouting is the second group: the weighted route on the chart's release, and beside it
// the example's releases. Apart, the two groups' pods fit in the node's 2 CPUs of requests; all
// at once, some stayed Pending.
const BesideRouting = "beside-routing"

// Registry returns a registry of Defs.
func Registry() (*harness.Registry, error) {
	r := &harness.Registry{}
	for _, d := range Defs() {
		if err := r.Register(d); err != nil {
			return nil, err
		}
	}
	return r, nil
}

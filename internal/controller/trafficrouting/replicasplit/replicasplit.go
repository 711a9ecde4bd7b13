// Package replicasplit is the router of a canary without spec.trafficRouting: one Service
// selects the pods of both tracks, so the gray track's share of the traffic is its share of the
// pods, and the weight is set by splitting spec.replicas between the track Deployments (which
// the reconciler applies). It writes no object of its own and needs no RBAC beyond the
// reconciler's.
package replicasplit

import (
	"context"
	"errors"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/controller/trafficrouting"
)

// New is the replica split's trafficrouting.Factory.
func New(*v1alpha1.PoolCanary, trafficrouting.Deps) trafficrouting.Router { return router{} }

// router is the replica split. It holds no state.
type router struct{}

// Split divides replicas (see the package function Split).
func (router) Split(replicas, weight int32) (stable, gray int32) { return Split(replicas, weight) }

// Services: the tracks share the chart's Service, which the reconciler does not write.
func (router) Services() (stable, gray string, ok bool) { return "", "", false }

// Weighted is false: the weight is the pod counts.
func (router) Weighted() bool { return false }

// errNotWeighted is what the weight methods return: the reconciler never calls them (Weighted).
var errNotWeighted = errors.New("the replica split sets no weight of its own: its weight is the pod counts")

func (router) SetUp(context.Context) (*trafficrouting.Problem, error) { return nil, nil }

func (router) SetWeight(context.Context, int32) (trafficrouting.Change, *trafficrouting.Problem, error) {
	return trafficrouting.Change{}, nil, errNotWeighted
}

func (router) VerifyWeight(context.Context) (int32, error) { return 0, errNotWeighted }

// Split divides replicas between the stable and gray tracks for a gray weight in percent.
//
//   - gray = ceil(replicas * weight / 100) when weight > 0, so any positive weight gets the
//     gray track at least one pod (a 10% step on 3 replicas runs 1 gray pod, not 0);
//   - stable gets the rest, but never fewer than 1 while replicas >= 1: the gray track is
//     judged against a stable baseline running at the same time, so the last pod always
//     stays on stable and a weight of 100 still leaves one stable pod;
//   - so replicas == 1 cannot run a canary: it stays 1 stable + 0 gray and the analysis
//     holds on NoData. Use replicas (or an HPA's minReplicas) of 2 or more;
//   - replicas <= 0 gives 0 + 0 and weight <= 0 gives everything to stable.
//
// After a promotion or a rollback the weight is 0, so every replica runs on the stable track
// (with the gray pool mode after a promotion). stable + gray always equals max(replicas, 0).
func Split(replicas, weight int32) (stable, gray int32) {
	if replicas <= 0 {
		return 0, 0
	}
	if weight <= 0 {
		return replicas, 0
	}
	if weight > 100 {
		weight = 100
	}
	// int64: replicas * weight overflows int32 above ~21 million replicas.
	g := (int64(replicas)*int64(weight) + 99) / 100
	if g > int64(replicas)-1 {
		g = int64(replicas) - 1
	}
	return replicas - int32(g), int32(g)
}

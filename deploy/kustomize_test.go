package deploy_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolparity/poolparity/deploy/deploytest"
	"github.com/poolparity/poolparity/deploy/render"
)

// TestKustomizeGeneratedFromChart is the drift test: the kustomize base and components are the
// chart's own rendering, so the two ways to install can never disagree.
func TestKustomizeGeneratedFromChart(t *testing.T) {
	root := deploytest.Root(t)
	tools := deploytest.Tools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	files, err := render.Kustomize(ctx, root, tools)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		compareGolden(t, root, f)
	}
}

// TestKustomizeOverlaysBuild compares each overlay's build, without the dashboard ConfigMaps
// (TestDashboardConfigMapsMatchSource checks those), with deploy/testdata/kustomize, and checks
// the contracts on the whole build.
func TestKustomizeOverlaysBuild(t *testing.T) {
	root := deploytest.Root(t)
	kustomize := deploytest.Tool(t, "kustomize")
	for _, overlay := range render.Overlays {
		t.Run(overlay, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			golden, err := render.KustomizeGolden(ctx, root, kustomize, overlay)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, root, golden)
			out := deploytest.KustomizeBuild(t, filepath.Join("overlays", overlay))
			objs, err := deploytest.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := deploytest.CheckTracks(objs); err != nil {
				t.Errorf("track contract broken:\n%v", err)
			}
			if err := deploytest.CheckNoReplicasUnderHPA(objs); err != nil {
				t.Error(err)
			}
			for _, o := range objs {
				if ns := o.GetNamespace(); ns == "" {
					t.Errorf("%s/%s has no namespace", o.GetKind(), o.GetName())
				}
			}
		})
	}
}

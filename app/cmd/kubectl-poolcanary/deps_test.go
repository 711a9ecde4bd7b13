package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestThePluginDoesNotLinkTheController keeps the CLI small: the helpers it shares with the
// controller live on the API types (app/api/v1alpha1), so neither the controller package nor
// controller-runtime's manager (and the ~100 packages they bring) is linked into the plugin.
func TestThePluginDoesNotLinkTheController(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v: %s", err, stderr)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/poolparity/poolparity/app/api/v1alpha1") {
		t.Fatalf("go list -deps lists %d packages without the API types: not this plugin's dependencies", len(deps))
	}
	for _, p := range []string{
		"github.com/poolparity/poolparity/internal/controller",
		"sigs.k8s.io/controller-runtime/pkg/manager",
	} {
		t.Run(p, func(t *testing.T) {
			if slices.Contains(deps, p) {
				t.Errorf("the plugin links %s: move what it needs onto the API types", p)
			}
		})
	}
}

package controller_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/parity"
)

// TestModeEnumsAreTheRegistrys holds every list of statistical modes to the registry
// (parity.Modes): the PoolCanary CRD's statistical.mode enum is the registry's modes and its
// retired ones, each retired one refused by a CEL rule whose message is the registry's (naming
// its replacement); the default is the registry's everywhere; the chart's plugin mode enum is
// the registry's modes; and the v1alpha1 constants name only modes the registry knows.
func TestModeEnumsAreTheRegistrys(t *testing.T) {
	reg := parity.Modes()
	names := func(ms []parity.StatMode) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = string(m)
		}
		slices.Sort(out)
		return out
	}
	active := names(reg.Names())
	var retired []parity.StatMode
	for _, r := range reg.Retired() {
		retired = append(retired, r.Mode)
	}
	all := names(append(reg.Names(), retired...))

	crd := readCRD(t)
	mode := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["analysis"].Properties["statistical"].Properties["mode"]
	enum := enumStrings(t, mode)
	slices.Sort(enum)
	if !slices.Equal(enum, all) {
		t.Errorf("the CRD's statistical.mode enum %v, the registry's modes and retired ones %v: update the Enum marker on v1alpha1.StatisticalMode", enum, all)
	}
	var def string
	if mode.Default == nil || yaml.Unmarshal(mode.Default.Raw, &def) != nil || def != string(parity.DefaultMode) {
		t.Errorf("the CRD's default mode %v, the registry's %s", mode.Default, parity.DefaultMode)
	}
	for _, r := range reg.Retired() {
		rule := "self != '" + string(r.Mode) + "'"
		i := slices.IndexFunc(mode.XValidations, func(v apiextensionsv1.ValidationRule) bool { return v.Rule == rule })
		if i < 0 {
			t.Errorf("the CRD has no rule %q refusing the retired mode %s", rule, r.Mode)
			continue
		}
		if got := mode.XValidations[i].Message; got != r.Error() {
			t.Errorf("the CRD refuses %s with %q, the registry with %q", r.Mode, got, r.Error())
		}
		var ret parity.Retired
		if _, err := reg.Lookup(string(r.Mode)); !errors.As(err, &ret) || ret.Use == "" {
			t.Errorf("the registry's Lookup(%s) = %v, want the Retired error naming its replacement", r.Mode, err)
		}
	}

	if v1alpha1.StatisticalDefault != v1alpha1.StatisticalMode(parity.DefaultMode) || judge.DefaultMode != parity.DefaultMode {
		t.Errorf("defaults: v1alpha1 %s, judge %s; the registry's %s", v1alpha1.StatisticalDefault, judge.DefaultMode, parity.DefaultMode)
	}
	for _, m := range []v1alpha1.StatisticalMode{v1alpha1.StatisticalOff, v1alpha1.StatisticalReport, v1alpha1.StatisticalGate,
		v1alpha1.StatisticalConfirm, v1alpha1.StatisticalSequential, v1alpha1.StatisticalCounts} {
		if !slices.Contains(all, string(m)) {
			t.Errorf("v1alpha1 names the mode %s, which the registry does not know", m)
		}
	}

	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "poolparity", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Controller struct {
				Properties struct {
					ArgoRollouts struct {
						Properties struct {
							Plugin struct {
								Properties struct {
									Mode struct {
										Enum []string `json:"enum"`
									} `json:"mode"`
								} `json:"properties"`
							} `json:"plugin"`
						} `json:"properties"`
					} `json:"argoRollouts"`
				} `json:"properties"`
			} `json:"controller"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	plugin := slices.Clone(schema.Properties.Controller.Properties.ArgoRollouts.Properties.Plugin.Properties.Mode.Enum)
	slices.Sort(plugin)
	if !slices.Equal(plugin, active) {
		t.Errorf("values.schema.json's controller.argoRollouts.plugin.mode enum %v, the registry's modes %v", plugin, active)
	}
}

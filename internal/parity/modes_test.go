package parity_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/parity"
)

// TestRegistry: the registry lists the modes a user can choose, each with its gate; a retired
// mode or gate is refused naming its replacement (errors.As gives the Retired); an unknown name
// lists the valid ones.
func TestRegistry(t *testing.T) {
	reg := parity.Modes()
	if got, want := reg.Names(), []parity.StatMode{parity.StatCounts, parity.StatConfirm, parity.StatReport, parity.StatOff}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got, want := reg.Gates(), []parity.Gate{parity.GateCounts, parity.GateConfirmed, parity.GateThresholds}; !slices.Equal(got, want) {
		t.Errorf("Gates() = %v, want %v", got, want)
	}
	if reg.Names()[0] != parity.DefaultMode {
		t.Errorf("the registry lists %s first, the default is %s", reg.Names()[0], parity.DefaultMode)
	}
	for _, m := range reg.Names() {
		tt, err := reg.Lookup(string(m))
		if err != nil || tt.Mode() != m || tt.Doc() == "" {
			t.Errorf("Lookup(%s) = %v, %v", m, tt, err)
			continue
		}
		if g := tt.Gate(); g != "" && g.Mode() != m {
			t.Errorf("gate %s chooses %s, want %s", g, g.Mode(), m)
		}
		if want := m == parity.StatCounts; tt.AnytimeValid() != want {
			t.Errorf("%s: AnytimeValid() = %v, want %v", m, tt.AnytimeValid(), want)
		}
	}
	for _, r := range reg.Retired() {
		_, err := reg.Lookup(string(r.Mode))
		var ret parity.Retired
		if !errors.As(err, &ret) || ret.Mode != r.Mode || !strings.Contains(err.Error(), "was retired: use "+string(r.Use)) {
			t.Errorf("Lookup(%s) error %v, want one naming %s", r.Mode, err, r.Use)
		}
		if _, err := parity.ParseStatMode(string(r.Mode)); err == nil {
			t.Errorf("ParseStatMode(%s) accepted a retired mode", r.Mode)
		}
		if r.Gate != "" {
			if _, err := parity.ParseGate(string(r.Gate)); err == nil || !strings.Contains(err.Error(), "was retired") {
				t.Errorf("ParseGate(%s) error %v, want one saying it was retired", r.Gate, err)
			}
		}
		if _, err := reg.Lookup(string(r.Use)); err != nil {
			t.Errorf("%s's replacement %s is not in the registry: %v", r.Mode, r.Use, err)
		}
	}
	if _, err := parity.ParseStatMode("Often"); err == nil || !strings.Contains(err.Error(), "want Counts, Confirm, Report or Off") {
		t.Errorf("ParseStatMode(Often) error %v", err)
	}
	for _, g := range reg.Gates() {
		if !strings.Contains(parity.GateHelp(), string(g)+" (") {
			t.Errorf("GateHelp() does not describe %s: %s", g, parity.GateHelp())
		}
	}
}

// TestEvaluateComparesNoMode holds the seam: evaluate.go names no mode and no gate, and asserts
// no mode's type; every difference between the modes is a method of their Test (modes.go).
func TestEvaluateComparesNoMode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "evaluate.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if (strings.HasPrefix(n.Name, "Stat") || strings.HasPrefix(n.Name, "Gate")) && isModeName(n.Name) {
				t.Errorf("evaluate.go names the mode constant %s: move what differs into the modes' Test methods", n.Name)
			}
			if strings.HasSuffix(n.Name, "Mode") && n.Name != "StatMode" && strings.ToLower(n.Name[:1]) == n.Name[:1] {
				t.Errorf("evaluate.go names the mode type %s", n.Name)
			}
		case *ast.TypeAssertExpr:
			t.Error("evaluate.go asserts a type")
		}
		return true
	})
}

// isModeName reports whether name is one of the mode or gate constants.
func isModeName(name string) bool {
	for _, m := range []string{"StatOff", "StatReport", "StatGate", "StatConfirm", "StatSequential", "StatCounts",
		"GateThresholds", "GateConfirmed", "GateSequential", "GateCounts"} {
		if name == m {
			return true
		}
	}
	return false
}

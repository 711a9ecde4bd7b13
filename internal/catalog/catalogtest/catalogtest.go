// Package catalogtest holds test helpers over the parity catalog for the
// fake Prometheus servers of the judge's and the controller's tests: the
// rules API's answer of a Prometheus that has loaded the poolparity
// recording rules.
package catalogtest

import (
	"encoding/json"
	"net/http"

	"github.com/poolparity/poolparity/internal/catalog"
)

// Windows are the rule families WriteRules lists: the catalog's 5m and the
// 1m the error ratio's request counts read.
var Windows = []string{"5m", "1m"}

// RuleNames returns the name of every recording rule of c's families
// windows: the guard's request and track rules and each SLI's rules.
func RuleNames(c catalog.Catalog, windows ...string) []string {
	var names []string
	for _, win := range windows {
		names = append(names, c.Guard.RequestRule+win, c.Guard.MinTrackRule+win)
		for _, s := range c.SLIs {
			names = append(names, s.Rules(win)...)
		}
	}
	return names
}

// WriteRules answers /api/v1/rules as a Prometheus loaded with every
// recording rule of catalog.Default()'s Windows would: one group, each rule
// healthy.
func WriteRules(w http.ResponseWriter) {
	var rules []map[string]any
	for _, n := range RuleNames(catalog.Default(), Windows...) {
		rules = append(rules, map[string]any{"type": "recording", "name": n, "query": "vector(1)", "health": "ok"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "success",
		"data":   map[string]any{"groups": []any{map[string]any{"name": "poolparity", "file": "rules.yml", "interval": 30, "rules": rules}}},
	})
}

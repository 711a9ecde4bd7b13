// Package catalogtest holds test helpers over the parity catalog for the
// fake Prometheus servers of the judge's and the controller's tests: the
// rules API's answer of a Prometheus that has loaded the poolparity
// recording rules, with or without the poolparity.counts group.
package catalogtest

import (
	"encoding/json"
	"net/http"
	"time"

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

// CountRuleNames returns the count rules of c's SLIs (their count inputs'
// requests and numerators, catalog.CountInputs), each once, in the
// catalog's order: the poolparity.counts group the count-based test needs
// loaded.
func CountRuleNames(c catalog.Catalog) []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range c.SLIs {
		if s.Counts == nil {
			continue
		}
		for _, n := range []string{s.Counts.Requests, s.Counts.Num} {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// WriteRules answers /api/v1/rules as a Prometheus loaded with every
// recording rule of catalog.Default()'s Windows would: one group, each rule
// healthy, and no poolparity.counts group.
func WriteRules(w http.ResponseWriter) { writeGroups(w, 0) }

// WriteRulesWithCounts answers as WriteRules, and a second group,
// poolparity.counts, evaluated every interval, with catalog.Default()'s
// count rules: a Prometheus the count-based test can read.
func WriteRulesWithCounts(w http.ResponseWriter, interval time.Duration) { writeGroups(w, interval) }

// writeGroups writes the rules answer, the counts group when
// countInterval is positive.
func writeGroups(w http.ResponseWriter, countInterval time.Duration) {
	groups := []any{group("poolparity", 30*time.Second, RuleNames(catalog.Default(), Windows...))}
	if countInterval > 0 {
		groups = append(groups, group("poolparity.counts", countInterval, CountRuleNames(catalog.Default())))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"groups": groups}})
}

// group is one rule group of the answer, each rule healthy.
func group(name string, interval time.Duration, names []string) map[string]any {
	var rules []map[string]any
	for _, n := range names {
		rules = append(rules, map[string]any{"type": "recording", "name": n, "query": "vector(1)", "health": "ok"})
	}
	return map[string]any{"name": name, "file": "rules.yml", "interval": interval.Seconds(), "rules": rules}
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/catalog"
)

// Paths, relative to the repository root, of the files written from the parity catalog.
const (
	valuesPath       = render.ChartPath + "/values.yaml"
	parityChecksPath = render.ChartPath + "/files/parity-checks.yaml"
	contractsPath    = "docs/contracts.md"
	flaggerPath      = "deploy/flagger/canary.yaml"
)

// catalogBlock names the generated block of docs/contracts.md.
const catalogBlock = "catalog"

// floorValuesKey and relFloorValuesKey are the fields of rules.alerts.<key> that hold an SLI's
// floor, its absolute and relative parts (the alerts' effect-size floor, e.g.
// rules.alerts.latencyRegression.minDelta and minDeltaRelative).
const (
	floorValuesKey    = "minDelta"
	relFloorValuesKey = "minDeltaRelative"
)

// catalogFiles returns the files written from c under root, in the order the other steps need
// them (values.yaml before the rules files, the dashboards before the chart's copies): the
// chart's catalog values, its Argo Rollouts and Flagger checks, the Flagger example's
// thresholds, the dashboards' parity thresholds and the SLI table of docs/contracts.md. Only the catalog's parts of the edited
// files change; the rest stays byte for byte.
func catalogFiles(root string, c catalog.Catalog) ([]render.File, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("the catalog: %w", err)
	}
	read := func(p string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		return b, nil
	}
	var out []render.File
	values, err := read(valuesPath)
	if err != nil {
		return nil, err
	}
	if values, err = editValues(values, c); err != nil {
		return nil, fmt.Errorf("%s: %w", valuesPath, err)
	}
	out = append(out, render.File{Path: valuesPath, Data: values})
	checks, err := parityChecks(c)
	if err != nil {
		return nil, err
	}
	out = append(out, render.File{Path: parityChecksPath, Data: checks})
	flagger, err := read(flaggerPath)
	if err != nil {
		return nil, err
	}
	if flagger, err = editFlaggerCanary(flagger, c); err != nil {
		return nil, fmt.Errorf("%s: %w", flaggerPath, err)
	}
	out = append(out, render.File{Path: flaggerPath, Data: flagger})
	dash, err := render.Dashboards(root)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(dash)) {
		p := render.DashboardsPath + "/" + name
		data, err := editDashboard(dash[name], c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, render.File{Path: p, Data: data})
	}
	doc, err := read(contractsPath)
	if err != nil {
		return nil, err
	}
	if doc, err = replaceBlock(doc, catalogBlock, catalogTable(c)); err != nil {
		return nil, fmt.Errorf("%s: %w", contractsPath, err)
	}
	out = append(out, render.File{Path: contractsPath, Data: doc})
	return out, nil
}

// staleCatalogFiles returns the paths of the files under root that differ from what c makes.
func staleCatalogFiles(root string, c catalog.Catalog) ([]string, error) {
	files, err := catalogFiles(root, c)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, f := range files {
		have, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil || !bytes.Equal(have, f.Data) {
			stale = append(stale, f.Path)
		}
	}
	return stale, nil
}

// formatNumber spells a threshold for people: at least two decimals when it has a fraction
// (1.2 as 1.20, 0.25 as 0.25), none when it is whole (2).
func formatNumber(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 < 2 {
		s += "0"
	}
	return s
}

// formatDuration spells d as a rule window does: 5m, not 5m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// editValues sets, in the chart's values.yaml, rules.minRequestRate to the catalog's guard and
// each rules.alerts.<key>.threshold (and minDelta, for an SLI with a floor) to the catalog's,
// editing just those scalars so that comments and layout stay. An alert key the values lack is
// added at the end of rules.alerts.
func editValues(src []byte, c catalog.Catalog) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("not a YAML document")
	}
	rules := mappingValue(doc.Content[0], "rules")
	if rules == nil {
		return nil, errors.New("no rules: mapping")
	}
	alerts := mappingValue(rules, "alerts")
	if alerts == nil || alerts.Kind != yaml.MappingNode {
		return nil, errors.New("no rules.alerts: mapping")
	}
	lines := strings.SplitAfter(string(src), "\n")
	set := func(parent *yaml.Node, key, where string, v float64) error {
		k, val := mappingEntry(parent, key)
		if k == nil {
			return fmt.Errorf("no %s.%s", where, key)
		}
		return setScalar(lines, k, val, formatNumber(v))
	}
	if err := set(rules, "minRequestRate", "rules", c.Guard.MinRequestRate); err != nil {
		return nil, err
	}
	var missing []catalog.AlertValue
	for _, a := range c.AlertValues() {
		node := mappingValue(alerts, a.Key)
		if node == nil {
			missing = append(missing, a)
			continue
		}
		where := "rules.alerts." + a.Key
		if err := set(node, "threshold", where, a.Threshold); err != nil {
			return nil, err
		}
		if a.HasFloor {
			if err := set(node, floorValuesKey, where, a.Floor); err != nil {
				return nil, err
			}
			if err := set(node, relFloorValuesKey, where, a.RelFloor); err != nil {
				return nil, err
			}
		}
	}
	if len(missing) > 0 {
		// After the line of the last scalar under rules.alerts.
		at := lastLine(alerts)
		var add strings.Builder
		indent := strings.Repeat(" ", alerts.Content[0].Column-1)
		for _, a := range missing {
			fmt.Fprintf(&add, "%s%s:\n", indent, a.Key)
			fmt.Fprintf(&add, "%s  # -- %s: the default threshold comes from the parity catalog (internal/catalog; hack/gen writes it).\n", indent, a.Alert)
			fmt.Fprintf(&add, "%s  threshold: %s\n", indent, formatNumber(a.Threshold))
			if a.HasFloor {
				fmt.Fprintf(&add, "%s  # -- Effect-size floor, max(%s, %s x stable): from the parity catalog too.\n", indent, floorValuesKey, relFloorValuesKey)
				fmt.Fprintf(&add, "%s  %s: %s\n", indent, floorValuesKey, formatNumber(a.Floor))
				fmt.Fprintf(&add, "%s  %s: %s\n", indent, relFloorValuesKey, formatNumber(a.RelFloor))
			}
		}
		lines = slices.Insert(lines, at, add.String())
	}
	return []byte(strings.Join(lines, "")), nil
}

// mappingEntry returns the key and value nodes of key in mapping m, or nils.
func mappingEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// mappingValue returns the value node of key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	_, v := mappingEntry(m, key)
	return v
}

// lastLine returns the highest line number (1-based) of n and its descendants.
func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}

// setScalar replaces, on the line of key k, the plain scalar v that follows "key:" with repl.
func setScalar(lines []string, k, v *yaml.Node, repl string) error {
	if v == nil || v.Kind != yaml.ScalarNode || v.Style != 0 || v.Line != k.Line {
		return fmt.Errorf("%s (line %d) is not a plain scalar on its key's line", k.Value, k.Line)
	}
	i := k.Line - 1
	line := lines[i]
	prefix := regexp.MustCompile(`^\s*` + regexp.QuoteMeta(k.Value) + `:\s*`).FindString(line)
	rest := line[len(prefix):]
	if prefix == "" || !strings.HasPrefix(rest, v.Value) {
		return fmt.Errorf("line %d %q: cannot find %s's value", k.Line, strings.TrimSpace(line), k.Value)
	}
	lines[i] = prefix + repl + rest[len(v.Value):]
	return nil
}

// parityCheck is one entry of files/parity-checks.yaml: a check of the Argo Rollouts
// AnalysisTemplate and a Flagger MetricTemplate.
type parityCheck struct {
	// Name is the SLI's ID.
	Name string `json:"name"`
	// ValuesKey is the alert under rules.alerts whose threshold is the check's max.
	ValuesKey string `json:"valuesKey"`
	// ParityRule and FloorRule are the catalog's rules, without their window.
	ParityRule string `json:"parityRule"`
	FloorRule  string `json:"floorRule,omitempty"`
}

// parityChecks returns files/parity-checks.yaml: one check per catalog SLI that has a parity
// rule and an alert, in catalog order.
func parityChecks(c catalog.Catalog) ([]byte, error) {
	var checks []parityCheck
	for _, s := range c.SLIs {
		if s.ParityRule == "" || s.Alert == nil {
			continue
		}
		checks = append(checks, parityCheck{Name: string(s.ID), ValuesKey: s.Alert.ValuesKey, ParityRule: s.ParityRule, FloorRule: s.FloorRule})
	}
	if len(checks) == 0 {
		return nil, errors.New("no catalog SLI has both a parity rule and an alert: the Argo Rollouts and Flagger checks would be empty")
	}
	y, err := sigsyaml.Marshal(checks)
	if err != nil {
		return nil, fmt.Errorf("marshalling the parity checks: %w", err)
	}
	head := "# Code generated by `make generate` (hack/gen) from internal/catalog; DO NOT EDIT.\n" +
		"# The parity checks of the Argo Rollouts AnalysisTemplate and the Flagger MetricTemplates\n" +
		"# (templates/controller-integrations.yaml): one per catalog SLI with a parity rule and an alert.\n" +
		"# Each check's max is rules.alerts.<valuesKey>.threshold; a floorRule is checked against\n" +
		"# rules.alerts.<valuesKey>." + floorValuesKey + ".\n"
	return append([]byte(head), y...), nil
}

// editFlaggerCanary sets, in the Flagger example (its first document, the Canary), each
// spec.analysis.metrics[].thresholdRange.max to the threshold of the catalog SLI the metric is
// named after, editing just those scalars so that comments and layout stay. A metric must name
// an SLI the chart has a MetricTemplate of (a parity check: a parity rule and an alert).
func editFlaggerCanary(src []byte, c catalog.Catalog) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("parsing the Canary: %w", err)
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("not a YAML document")
	}
	metrics := mappingValue(mappingValue(mappingValue(doc.Content[0], "spec"), "analysis"), "metrics")
	if metrics == nil || metrics.Kind != yaml.SequenceNode || len(metrics.Content) == 0 {
		return nil, errors.New("no spec.analysis.metrics list")
	}
	lines := strings.SplitAfter(string(src), "\n")
	for i, m := range metrics.Content {
		where := fmt.Sprintf("spec.analysis.metrics[%d]", i)
		name := mappingValue(m, "name")
		if name == nil {
			return nil, fmt.Errorf("%s has no name", where)
		}
		s, ok := c.Get(catalog.ID(name.Value))
		if !ok || s.ParityRule == "" || s.Alert == nil {
			return nil, fmt.Errorf("%s is named %q, not a catalog SLI with a parity rule and an alert", where, name.Value)
		}
		k, v := mappingEntry(mappingValue(m, "thresholdRange"), "max")
		if k == nil {
			return nil, fmt.Errorf("%s (%s) has no thresholdRange.max", where, name.Value)
		}
		if err := setScalar(lines, k, v, formatFlaggerNumber(s.Threshold)); err != nil {
			return nil, fmt.Errorf("%s (%s): %w", where, name.Value, err)
		}
	}
	return []byte(strings.Join(lines, "")), nil
}

// formatFlaggerNumber spells a Flagger threshold as the shortest number (1.1, 0.005).
func formatFlaggerNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// panelThresholdSLIs returns the SLIs whose thresholds a dashboard panel draws: those with an
// alert whose parity rule (or, without one, per-track rule) a target of the panel reads.
func panelThresholdSLIs(c catalog.Catalog, exprs []string) []catalog.SLI {
	var out []catalog.SLI
	for _, s := range c.SLIs {
		if s.Alert == nil {
			continue
		}
		rule := s.ParityRule
		if rule == "" {
			rule = s.Rule
		}
		if slices.ContainsFunc(exprs, func(e string) bool { return readsRule(e, rule) }) {
			out = append(out, s)
		}
	}
	return out
}

// readsRule reports whether the PromQL expr reads rule of some window ($window or e.g. 5m).
func readsRule(expr, rule string) bool {
	for rest := expr; ; {
		i := strings.Index(rest, rule)
		if i < 0 {
			return false
		}
		rest = rest[i+len(rule):]
		if rest != "" && (rest[0] == '$' || rest[0] >= '0' && rest[0] <= '9') {
			return true
		}
	}
}

// descriptionNumber is the threshold a panel description spells: "Alert above 1.20" or "alert
// threshold (0.5)".
var descriptionNumber = regexp.MustCompile(`([Aa]lert above |alert threshold \()(-?[0-9]+(?:\.[0-9]+)?)`)

// editDashboard sets, in a Grafana dashboard, the threshold steps (and the number in the
// description) of each panel drawing an SLI's threshold to the catalog's, and the steps of a
// panel drawing the per-track request rate to the traffic guard's; the rest stays byte for byte.
func editDashboard(src []byte, c catalog.Catalog) ([]byte, error) {
	leaves, err := jsonLeaves(src)
	if err != nil {
		return nil, err
	}
	type panel struct {
		exprs []string
		steps []jsonLeaf // non-null threshold step values
		desc  *jsonLeaf
	}
	panels := map[string]*panel{}
	var order []string
	for _, l := range leaves {
		key, rel := panelOf(l.path)
		if key == "" {
			continue
		}
		p := panels[key]
		if p == nil {
			p = &panel{}
			panels[key] = p
			order = append(order, key)
		}
		switch {
		case len(rel) == 3 && rel[0] == "targets" && rel[2] == "expr":
			if s, ok := l.value.(string); ok {
				p.exprs = append(p.exprs, s)
			}
		case len(rel) == 1 && rel[0] == "description":
			p.desc = &l
		case len(rel) == 6 && strings.Join(rel[:4], "/") == "fieldConfig/defaults/thresholds/steps" && rel[5] == "value" && l.value != nil:
			p.steps = append(p.steps, l)
		}
	}
	var edits []jsonEdit
	for _, key := range order {
		p := panels[key]
		if len(p.steps) == 0 {
			continue
		}
		var want float64
		switch slis := panelThresholdSLIs(c, p.exprs); {
		case len(slis) > 0:
			want = slis[0].Threshold
			for _, s := range slis[1:] {
				if s.Threshold != want {
					return nil, fmt.Errorf("panel %s draws the thresholds of %s and %s, which differ: split it", key, slis[0].ID, s.ID)
				}
			}
		case slices.ContainsFunc(p.exprs, func(e string) bool { return readsRule(e, c.Guard.RequestRule) }):
			want = c.Guard.MinRequestRate
		default:
			continue
		}
		for _, s := range p.steps {
			edits = append(edits, jsonEdit{s.start, s.end, []byte(strconv.FormatFloat(want, 'f', -1, 64))})
		}
		if p.desc != nil {
			raw := src[p.desc.start:p.desc.end]
			repl := descriptionNumber.ReplaceAll(raw, []byte("${1}"+formatNumber(want)))
			edits = append(edits, jsonEdit{p.desc.start, p.desc.end, repl})
		}
	}
	slices.SortFunc(edits, func(a, b jsonEdit) int { return a.start - b.start })
	return applyEdits(src, edits), nil
}

// panelOf splits a leaf's path into its panel (the path up to the innermost panels/<i>) and the
// path inside that panel; the key is empty for a leaf outside any panel.
func panelOf(path []string) (key string, rel []string) {
	for i := len(path) - 2; i >= 0; i-- {
		if path[i] == "panels" {
			if _, err := strconv.Atoi(path[i+1]); err == nil {
				return strings.Join(path[:i+2], "/"), path[i+2:]
			}
		}
	}
	return "", nil
}

// The markers around a generated block of a Markdown file.
const (
	blockBegin = "<!-- BEGIN generated: %s (hack/gen) -->\n"
	blockEnd   = "<!-- END generated -->\n"
)

// replaceBlock replaces the text between the markers of block name in doc with body.
func replaceBlock(doc []byte, name, body string) ([]byte, error) {
	begin := fmt.Sprintf(blockBegin, name)
	i := bytes.Index(doc, []byte(begin))
	if i < 0 {
		return nil, fmt.Errorf("no %q line", strings.TrimSpace(begin))
	}
	from := i + len(begin)
	j := bytes.Index(doc[from:], []byte(blockEnd))
	if j < 0 {
		return nil, fmt.Errorf("no %q line after %q", strings.TrimSpace(blockEnd), strings.TrimSpace(begin))
	}
	out := slices.Concat(doc[:from], []byte(body), doc[from+j:])
	return out, nil
}

// catalogTable returns the docs' SLI table: every catalog SLI with its default threshold, floor,
// alert, rules and when it is judged, then the traffic guard and the statistical defaults.
func catalogTable(c catalog.Catalog) string {
	var b strings.Builder
	b.WriteString("<!-- Written by `make generate` from internal/catalog (catalog.Default); edit the catalog, not this table. -->\n\n")
	b.WriteString("| ID | display name | unit | comparison | default threshold | floor | alert (`rules.alerts.*`) | per-track rule (window W) | parity rule | judged | what it catches |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, s := range c.SLIs {
		floor, alert, parity := "-", "-", "-"
		switch {
		case s.Floor > 0 && s.RelFloor > 0:
			floor = fmt.Sprintf("max(%s, %s%% of stable)", formatNumber(s.Floor), formatNumber(100*s.RelFloor))
		case s.Floor > 0:
			floor = formatNumber(s.Floor)
		case s.RelFloor > 0:
			floor = formatNumber(100*s.RelFloor) + "% of stable"
		}
		if s.Alert != nil {
			alert = fmt.Sprintf("`%s` (`%s`)", s.Alert.Name, s.Alert.ValuesKey)
			if len(s.Alert.Labels) > 0 {
				var ls []string
				for _, k := range slices.Sorted(maps.Keys(s.Alert.Labels)) {
					ls = append(ls, fmt.Sprintf("%s=%q", k, s.Alert.Labels[k]))
				}
				alert += " {" + strings.Join(ls, ", ") + "}"
			}
		}
		if s.ParityRule != "" {
			parity = "`" + s.ParityRule + "W`"
			if s.FloorRule != "" {
				parity += ", floor `" + s.FloorRule + "W`"
			}
		}
		rule := "`" + s.Rule + "W`"
		if s.WeightRule != "" {
			rule += ", weighted by `" + s.WeightRule + "W`"
		}
		judged := string(s.Judged)
		if s.Presence != "" {
			judged += " (`" + s.Presence + "`)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s | %s | %s | %s | %s | %s | %s |\n",
			s.ID, s.Name, s.Unit, s.Comparison, formatNumber(s.Threshold), floor, alert, rule, parity, judged, dash(s.Doc))
	}
	g, st := c.Guard, c.Stat
	fmt.Fprintf(&b, "\nJudged: `%s`, a row without a value is NO DATA for the verdict; `%s`, only when the gray track exposes sync.Pool series; `%s` (metric), where either compared track exposes that metric's series: a service without them (no go-redis) gets a note that the SLI was not judged, and can PASS.\n",
		catalog.Always, catalog.WhenGrayPooled, catalog.WhenPresent)
	fmt.Fprintf(&b, "\nThresholds and alerts read the %s family. Traffic guard: no SLI counts unless both tracks serve more than %s req/s (`rules.minRequestRate`; `%s%s`), or, for PoolCanary, more than %d requests each in %s. Statistical test (one-sided Mann-Whitney U per SLI): confidence %s, smallest effect (Vargha-Delaney A) %s, at least %d samples per track, taken every %s over %s from the %s family. Sequential test (inside statistical.mode Counts, for the SLIs without count inputs; the mode Sequential is retired): per-rollout alpha %s, spent over the k SLIs tested by Bonferroni (alpha/k each), on the paired per-step differences from the rollout's start.\n",
		c.Window, formatNumber(g.MinRequestRate), g.MinTrackRule, c.Window, g.MinRequests, formatDuration(g.RequestWindow),
		formatNumber(st.Confidence), formatNumber(st.MinEffect), st.MinSamples, formatDuration(st.Step), formatDuration(st.Window), st.SampleFamily, formatNumber(st.SequentialAlpha))
	return b.String()
}

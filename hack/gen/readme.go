package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/catalog"
)

// Paths, relative to the repository root, of the chart's README and what it is made of.
const (
	readmePath         = render.ChartPath + "/README.md"
	readmeTemplatePath = render.ChartPath + "/README.md.gotmpl"
	chartYAMLPath      = render.ChartPath + "/Chart.yaml"
)

// valueRow is one documented value of values.yaml: a row of the README's values table.
type valueRow struct {
	Key         string // dotted path, e.g. redis.auth.enabled
	Type        string // string, int, float, bool, list, object or null
	Default     string // the value in values.yaml, as JSON
	Description string // the `# --` comment, its lines joined
}

// readmeData is what README.md.gotmpl renders.
type readmeData struct {
	Name, Version, AppVersion, KubeVersion, Description string
	// Values is the values table in Markdown, one row per documented value.
	Values string
}

// chartReadme renders the chart's README from its template, Chart.yaml and values, the
// values.yaml that the catalog step writes (so that its thresholds are the catalog's).
func chartReadme(root string, values []byte) (render.File, error) {
	tmplText, err := os.ReadFile(filepath.Join(root, readmeTemplatePath))
	if err != nil {
		return render.File{}, fmt.Errorf("reading the README template: %w", err)
	}
	chartYAML, err := os.ReadFile(filepath.Join(root, chartYAMLPath))
	if err != nil {
		return render.File{}, fmt.Errorf("reading Chart.yaml: %w", err)
	}
	var chart struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		AppVersion  string `json:"appVersion"`
		KubeVersion string `json:"kubeVersion"`
		Description string `json:"description"`
	}
	if err := sigsyaml.Unmarshal(chartYAML, &chart); err != nil {
		return render.File{}, fmt.Errorf("%s: %w", chartYAMLPath, err)
	}
	rows, err := valueRows(values)
	if err != nil {
		return render.File{}, fmt.Errorf("%s: %w", valuesPath, err)
	}
	tmpl, err := template.New("README.md.gotmpl").Option("missingkey=error").Parse(string(tmplText))
	if err != nil {
		return render.File{}, fmt.Errorf("%s: %w", readmeTemplatePath, err)
	}
	var out bytes.Buffer
	err = tmpl.Execute(&out, readmeData{
		Name: chart.Name, Version: chart.Version, AppVersion: chart.AppVersion, KubeVersion: chart.KubeVersion,
		Description: strings.TrimSpace(chart.Description), Values: valuesTable(rows),
	})
	if err != nil {
		return render.File{}, fmt.Errorf("%s: %w", readmeTemplatePath, err)
	}
	return render.File{Path: readmePath, Data: out.Bytes()}, nil
}

// valueRows lists the documented values of a values.yaml in file order. A key whose head comment
// has a line starting with "# --" is documented by that line and the comment lines after it (a
// map or list so documented is one row, its whole value the default); a map without one is
// walked into; any other key is an error that names it: every value has a description.
func valueRows(values []byte) ([]valueRow, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want a mapping at the top")
	}
	var rows []valueRow
	var undocumented []string
	var walk func(prefix string, m *yaml.Node) error
	walk = func(prefix string, m *yaml.Node) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			key := prefix + k.Value
			desc, ok := docComment(k.HeadComment)
			switch {
			case ok:
				row, err := newValueRow(key, v, desc)
				if err != nil {
					return err
				}
				rows = append(rows, row)
			case v.Kind == yaml.MappingNode && len(v.Content) > 0:
				if err := walk(key+".", v); err != nil {
					return err
				}
			default:
				undocumented = append(undocumented, key)
			}
		}
		return nil
	}
	if err := walk("", doc.Content[0]); err != nil {
		return nil, err
	}
	if len(undocumented) > 0 {
		return nil, fmt.Errorf("no `# --` comment above %s: every value needs a description", strings.Join(undocumented, ", "))
	}
	return rows, nil
}

// docComment returns the description of a head comment: from its "# --" line to its end, the
// lines joined by spaces, and whether there is one.
func docComment(head string) (string, bool) {
	lines := strings.Split(head, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "# --")
		if !ok {
			continue
		}
		parts := []string{strings.TrimSpace(rest)}
		for _, c := range lines[i+1:] {
			c = strings.TrimPrefix(strings.TrimSpace(c), "#")
			if c = strings.TrimSpace(c); c != "" {
				parts = append(parts, c)
			}
		}
		return strings.Join(parts, " "), true
	}
	return "", false
}

// newValueRow describes the value node v of key.
func newValueRow(key string, v *yaml.Node, desc string) (valueRow, error) {
	r := valueRow{Key: key, Description: desc}
	var val any
	if err := v.Decode(&val); err != nil {
		return r, fmt.Errorf("%s: %w", key, err)
	}
	switch v.Kind {
	case yaml.SequenceNode:
		r.Type = "list"
	case yaml.MappingNode:
		r.Type = "object"
	case yaml.ScalarNode:
		r.Type = map[string]string{"!!str": "string", "!!int": "int", "!!float": "float", "!!bool": "bool", "!!null": "null"}[v.ShortTag()]
		if r.Type == "" {
			return r, fmt.Errorf("%s: a value of tag %s", key, v.ShortTag())
		}
	default:
		return r, fmt.Errorf("%s: an alias or another node the table cannot show", key)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jsonable(val)); err != nil {
		return r, fmt.Errorf("%s: %w", key, err)
	}
	r.Default = strings.TrimSuffix(b.String(), "\n")
	return r, nil
}

// jsonable converts what yaml.v3 decodes (maps keyed by any) into values encoding/json takes.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// valuesTable renders rows as a Markdown table (GitHub's and Artifact Hub's dialect).
func valuesTable(rows []valueRow) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|-----|------|---------|-------------|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", codeCell(r.Key), r.Type, codeCell(r.Default), textCell(r.Description))
	}
	return b.String()
}

// codeCell puts s in a code span of a table cell: a pipe must be escaped even there.
func codeCell(s string) string {
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

var (
	// placeholder is a name in angle brackets, such as <fullname> or <its release name>.
	placeholder = regexp.MustCompile(`<[A-Za-z][-A-Za-z0-9. ]*>`)
	// emphasis is what Markdown may take for emphasis: any asterisk, and an underscore that
	// starts a word (__meta_kubernetes_...); one inside a word (gray_status) is literal.
	emphasis = regexp.MustCompile(`\*|(^|[^A-Za-z0-9_])_+`)
)

// textCell makes a description a table cell that reads the same raw (helm show readme) and
// rendered: outside its code spans a placeholder such as <fullname>, which Markdown would take for
// an HTML tag and drop, becomes a code span, and what Markdown would take for emphasis is
// escaped; pipes are escaped everywhere.
func textCell(s string) string {
	parts := strings.Split(s, "`")
	for i := range parts {
		if i%2 == 0 { // outside a code span
			parts[i] = emphasis.ReplaceAllStringFunc(parts[i], func(m string) string {
				return strings.NewReplacer("*", `\*`, "_", `\_`).Replace(m)
			})
			parts[i] = placeholder.ReplaceAllString(parts[i], "`$0`")
		}
		parts[i] = strings.ReplaceAll(parts[i], "|", `\|`)
	}
	return strings.Join(parts, "`")
}

// readmeFrom renders the chart's README from the values.yaml among files (catalogFiles' output).
func readmeFrom(root string, files []render.File) (render.File, error) {
	for _, f := range files {
		if f.Path == valuesPath {
			return chartReadme(root, f.Data)
		}
	}
	return render.File{}, fmt.Errorf("no %s among the catalog's files", valuesPath)
}

// staleReadme reports whether the committed README differs from the one rendered from the
// catalog's values.yaml.
func staleReadme(root string, c catalog.Catalog) (bool, error) {
	files, err := catalogFiles(root, c)
	if err != nil {
		return false, err
	}
	want, err := readmeFrom(root, files)
	if err != nil {
		return false, err
	}
	have, err := os.ReadFile(filepath.Join(root, readmePath))
	return err != nil || !bytes.Equal(have, want.Data), nil
}

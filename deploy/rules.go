package deploy

import (
	_ "embed"

	"github.com/poolparity/poolparity/internal/rulesgen"
)

// The chart's rules template and values, compiled into the binaries that render rules without a
// clone (`poolparity-parity rules`).
var (
	//go:embed helm/poolparity/files/rules.yaml.tmpl
	rulesTemplate []byte
	//go:embed helm/poolparity/values.yaml
	chartValues []byte
)

// Paths of the rules' sources, relative to the repository root.
const (
	RulesTemplatePath = "deploy/helm/poolparity/files/rules.yaml.tmpl"
	ChartValuesPath   = "deploy/helm/poolparity/values.yaml"
)

// RulesSource returns the chart's rules template and values as this binary was built with them,
// for rulesgen.Render; generator is the command the rendered file's header names.
func RulesSource(generator string) rulesgen.Source {
	return rulesgen.Source{
		Template:     append([]byte(nil), rulesTemplate...),
		Values:       append([]byte(nil), chartValues...),
		TemplatePath: RulesTemplatePath,
		ValuesPath:   ChartValuesPath,
		Generator:    generator,
	}
}

// Package dashboards holds poolparity's Grafana dashboards (one JSON file per board, with stable
// uids and datasource, namespace, job and window variables) and the list of series the service
// must expose, which the dashboards and the recording rules are checked against.
//
// The list lives in testdata/service-series.txt and is embedded here so that any test, such as the
// service's live-scrape test, can compare a real /metrics page with it through ServiceSeries.
package dashboards

import (
	_ "embed"
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

//go:embed testdata/service-series.txt
var seriesFile string

//go:embed testdata/otel-service-series.txt
var otelSeriesFile string

// Series is one metric family the service must expose.
type Series struct {
	// Name is the family name as written on the text exposition's # TYPE line.
	Name string
	// Type is counter, gauge, histogram or summary.
	Type string
}

// Names returns the series names a query can select for the family: a histogram's
// _bucket, _sum and _count series, a summary's _sum and _count and the name itself, or the name.
func (s Series) Names() []string {
	switch s.Type {
	case "histogram":
		return []string{s.Name + "_bucket", s.Name + "_sum", s.Name + "_count"}
	case "summary":
		return []string{s.Name, s.Name + "_sum", s.Name + "_count"}
	default:
		return []string{s.Name}
	}
}

// ServiceSeries returns the metric families listed in testdata/service-series.txt, in file order.
func ServiceSeries() ([]Series, error) {
	return ParseSeries(seriesFile)
}

// OTelServiceSeries returns the metric families an OpenTelemetry-instrumented service exposes
// beyond ServiceSeries' (testdata/otel-service-series.txt): the request and runtime series the
// semconv rules read (rules.http.metrics semconv, rules.runtime.metrics otel).
func OTelServiceSeries() ([]Series, error) {
	return ParseSeries(otelSeriesFile)
}

// ParseSeries parses a series list: one "<name> <type>" per line; blank lines and lines starting
// with # are ignored.
func ParseSeries(text string) ([]Series, error) {
	var out []Series
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("series list line %d: want \"<name> <type>\", got %q", i+1, line)
		}
		s := Series{Name: fields[0], Type: fields[1]}
		switch s.Type {
		case "counter", "gauge", "histogram", "summary":
		default:
			return nil, fmt.Errorf("series list line %d: unknown type %q", i+1, s.Type)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("series list line %d: %s is listed twice", i+1, s.Name)
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

// CheckExposition reads a Prometheus text exposition (a /metrics body) and reports, in one error,
// every listed family that is missing or has another type, and every sample of a listed family
// without the gray_status and pool_mode labels. Families the service exposes beyond the list are
// fine. Labelled families appear only once they have a child (e.g. http_requests_total after the
// first request), so serve a request before scraping.
func CheckExposition(r io.Reader) error {
	want, err := ServiceSeries()
	if err != nil {
		return err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	got, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return fmt.Errorf("parsing the exposition: %w", err)
	}
	var problems []string
	for _, s := range want {
		mf, ok := got[s.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s (%s) is missing", s.Name, s.Type))
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != s.Type {
			problems = append(problems, fmt.Sprintf("%s is a %s, want a %s", s.Name, typ, s.Type))
		}
		for _, m := range mf.GetMetric() {
			have := map[string]bool{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue() != ""
			}
			if !have["gray_status"] || !have["pool_mode"] {
				problems = append(problems, fmt.Sprintf("%s has a series without gray_status and pool_mode: %v", s.Name, m.GetLabel()))
				break
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the exposition does not match dashboards/testdata/service-series.txt:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

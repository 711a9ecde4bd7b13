package promexport

import (
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/poolparity/poolparity/instrument"
)

// RuntimeMetrics matches the runtime/metrics names RegisterRuntime exports
// beyond the Go collector's defaults: the heap and GC-CPU series the
// poolparity rules read (go_gc_heap_allocs_bytes_total,
// go_cpu_classes_gc_total_cpu_seconds_total,
// go_cpu_classes_total_cpu_seconds_total) and a few the dashboards show,
// and nothing more, to keep the series count small.
var RuntimeMetrics = regexp.MustCompile(`^(/gc/heap/(allocs|live|goal):(bytes|objects)|/gc/cycles/total:gc-cycles|/cpu/classes/.*)$`)

// RegisterRuntime registers the Go runtime collector, with the
// RuntimeMetrics opt-in that client_golang's default leaves out, and the
// process collector (process_cpu_seconds_total, for CPU per request).
func RegisterRuntime(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: RuntimeMetrics})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the runtime collectors: %w", err)
		}
	}
	return nil
}

// WithTrack returns a Registerer that adds the track's gray_status and
// pool_mode to every series registered through it.
func WithTrack(reg prometheus.Registerer, t instrument.Track) prometheus.Registerer {
	return prometheus.WrapRegistererWith(prometheus.Labels(t.Labels()), reg)
}

package promexport_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/instrumenttest"
	"github.com/poolparity/poolparity/instrument/promexport"
)

const golden = `
# HELP syncpool_dirty_total Objects taken from the sync.Pool that were not as Put left them: they failed the pool's WithCheck check (state its reset left behind) or their WithPoison poison was overwritten (a write after Put). Each was dropped and replaced by a fresh one.
# TYPE syncpool_dirty_total counter
syncpool_dirty_total{%[1]spool="json_buffer"%[2]s} 1
syncpool_dirty_total{%[1]spool="report_scratch"%[2]s} 0
# HELP syncpool_drops_total Objects passed to Put that the pool's keep policy refused (for example over the size cap).
# TYPE syncpool_drops_total counter
syncpool_drops_total{%[1]spool="json_buffer"%[2]s} 1
syncpool_drops_total{%[1]spool="report_scratch"%[2]s} 5
# HELP syncpool_gets_total Calls to Get on the sync.Pool.
# TYPE syncpool_gets_total counter
syncpool_gets_total{%[1]spool="json_buffer"%[2]s} 10
syncpool_gets_total{%[1]spool="report_scratch"%[2]s} 5
# HELP syncpool_misses_total Gets on the sync.Pool that were not served from the pool (New was called, or the pool was empty).
# TYPE syncpool_misses_total counter
syncpool_misses_total{%[1]spool="json_buffer"%[2]s} 2
syncpool_misses_total{%[1]spool="report_scratch"%[2]s} 5
# HELP syncpool_puts_total Objects accepted back into the sync.Pool by Put.
# TYPE syncpool_puts_total counter
syncpool_puts_total{%[1]spool="json_buffer"%[2]s} 7
syncpool_puts_total{%[1]spool="report_scratch"%[2]s} 0
`

// expected fills the golden text with the labels that sort before "pool"
// (ending in a comma) and after it (starting with a comma).
func expected(before, after string) string {
	return strings.NewReplacer("%[1]s", before, "%[2]s", after).Replace(golden)
}

func TestCollectorGolden(t *testing.T) {
	tests := []struct {
		name   string
		opts   []promexport.Option
		before string
		after  string
	}{
		{"without options the series carry only the pool label", nil, "", ""},
		{"WithConstLabels adds its labels to every series",
			[]promexport.Option{promexport.WithConstLabels(prometheus.Labels{"component": "api", "zone": "a"})},
			`component="api",`, `,zone="a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := promexport.NewCollector(instrumenttest.SampleRegistry(t), tt.opts...)
			if err := testutil.CollectAndCompare(c, strings.NewReader(expected(tt.before, tt.after))); err != nil {
				t.Error(err)
			}
			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}

func TestCollectorThroughWrapRegistererWith(t *testing.T) {
	tracks := []struct {
		name   string
		labels prometheus.Labels
		before string
		after  string
	}{
		{"the gray track", prometheus.Labels{"gray_status": "true", "pool_mode": "pooled"}, `gray_status="true",`, `,pool_mode="pooled"`},
		{"the stable track", prometheus.Labels{"gray_status": "false", "pool_mode": "unpooled"}, `gray_status="false",`, `,pool_mode="unpooled"`},
	}
	for _, tt := range tracks {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			wrapped := prometheus.WrapRegistererWith(tt.labels, reg)
			if err := wrapped.Register(promexport.NewCollector(instrumenttest.SampleRegistry(t))); err != nil {
				t.Fatalf("registering through WrapRegistererWith: %v", err)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(expected(tt.before, tt.after))); err != nil {
				t.Error(err)
			}
			problems, err := testutil.GatherAndLint(reg)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			// Describe is exact, so a second collector for the same names
			// is refused rather than producing duplicate series.
			if err := wrapped.Register(promexport.NewCollector(instrumenttest.SampleRegistry(t))); err == nil {
				t.Error("registering a second collector with the same labels succeeded, want an AlreadyRegisteredError")
			}
		})
	}
}

func TestCollectorReadsAtScrapeTime(t *testing.T) {
	r := instrument.NewRegistry()
	c := promexport.NewCollector(r)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("an empty registry gave %d series, want 0", n)
	}
	p, err := instrument.NewBufferPool("json_buffer", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		p.Put(p.Get())
	}
	if got := testutil.ToFloat64(filter{c, promexport.GetsName}); got != 3 {
		t.Errorf("syncpool_gets_total = %v, want 3", got)
	}
	p.Get()
	if got := testutil.ToFloat64(filter{c, promexport.GetsName}); got != 4 {
		t.Errorf("syncpool_gets_total after one more Get = %v, want 4", got)
	}
	if got := testutil.ToFloat64(filter{c, promexport.PutsName}); got != 3 {
		t.Errorf("syncpool_puts_total = %v, want 3", got)
	}
}

func TestCollectorReportsInvalidPoolNamesAsErrors(t *testing.T) {
	bad := snapshotFunc(func() []instrument.PoolStats {
		return []instrument.PoolStats{{Name: "\xff"}}
	})
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(promexport.NewCollector(bad)); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err == nil {
		t.Error("Gather with an invalid UTF-8 pool name succeeded, want an error")
	}
}

type snapshotFunc func() []instrument.PoolStats

func (f snapshotFunc) Snapshot() []instrument.PoolStats { return f() }

// filter is a collector that passes on only the metrics of one name, so
// that testutil.ToFloat64 sees exactly one metric.
type filter struct {
	c    prometheus.Collector
	name string
}

func (f filter) Describe(ch chan<- *prometheus.Desc) { f.c.Describe(ch) }

func (f filter) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { f.c.Collect(all); close(all) }()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"`+f.name+`"`) {
			ch <- m
		}
	}
}

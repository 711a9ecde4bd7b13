package promexport_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/promexport"
)

// The service registers its pools once, then registers one Collector with
// a registerer that adds the track's labels to every series.
func ExampleNewCollector() {
	pools := instrument.NewRegistry()
	buf, err := instrument.NewBufferPool("json_buffer", 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := pools.Register(buf); err != nil {
		log.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	track := prometheus.WrapRegistererWith(prometheus.Labels{"gray_status": "true", "pool_mode": "pooled"}, reg)
	if err := track.Register(promexport.NewCollector(pools)); err != nil {
		log.Fatal(err)
	}

	b := buf.Get()
	b.WriteString(`{"id":1}`)
	buf.Put(b)

	// Print the gets and puts series (misses depend on the pool's state).
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP syncpool_gets_total Calls to Get on the sync.Pool.
# TYPE syncpool_gets_total counter
syncpool_gets_total{gray_status="true",pool="json_buffer",pool_mode="pooled"} 1
# HELP syncpool_puts_total Objects accepted back into the sync.Pool by Put.
# TYPE syncpool_puts_total counter
syncpool_puts_total{gray_status="true",pool="json_buffer",pool_mode="pooled"} 1
`), promexport.GetsName, promexport.PutsName)
	fmt.Println("matches:", err == nil)
	// Output: matches: true
}

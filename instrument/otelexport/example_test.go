package otelexport_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/otelexport"
)

func ExampleRegister() {
	pools := instrument.NewRegistry()
	buf, err := instrument.NewBufferPool("json_buffer", 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := pools.Register(buf); err != nil {
		log.Fatal(err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg, err := otelexport.Register(mp, pools)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()

	for i := 0; i < 3; i++ {
		b := buf.Get()
		b.WriteString("hello")
		buf.Put(b)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == otelexport.MissesName {
			continue // depends on the pool's state
		}
		dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
		pool, _ := dp.Attributes.Value("pool")
		fmt.Printf("%s %s pool=%s %d\n", m.Name, m.Unit, pool.AsString(), dp.Value)
	}
	// Output:
	// syncpool.gets {get} pool=json_buffer 3
	// syncpool.puts {put} pool=json_buffer 3
	// syncpool.drops {drop} pool=json_buffer 0
	// syncpool.dirty {dirty} pool=json_buffer 0
}

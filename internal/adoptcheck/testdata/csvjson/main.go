// Command csvjson is the service docs/adopt.md walks through: a small
// service written outside the poolparity repository, as a team's own would
// be. It converts CSV to JSON:
//
//	POST /convert   a CSV body (a header line, then records), answered as a JSON array of objects
//	GET  /healthz   liveness
//	GET  /metrics   Prometheus exposition
//
// It is instrumented as docs/adopt.md says: otelhttp's HTTP semantic
// conventions and OpenTelemetry's runtime metrics through the OpenTelemetry
// Prometheus exporter, client_golang's process collector, and its JSON
// buffers in an instrument pool, every series labelled with the track
// (gray_status, pool_mode).
//
// Its environment: HTTP_ADDR (default 127.0.0.1:8080), GRAY_STATUS (false
// or true) and POOL_MODE, one of
//
//	unpooled     a new buffer for every response
//	pooled       buffers from an instrument buffer pool, reset at Put
//	never-reset  a misuse: the buffers are pooled, but nothing resets them,
//	             so each response carries the previous ones before it
//	never-put    a misuse: the buffers are taken from the pool and never
//	             put back, so every Get allocates
//	use-after-put a misuse: the handler puts its buffer back before it
//	             writes the response from the buffer's bytes, so under
//	             concurrency another request may overwrite them first
//	shared-buffer a misuse: one buffer shared by every request, without a
//	             lock (a data race; responses mix under concurrency)
//
// With POOLPARITY_POISON=1 (which `poolparity-parity local -poison` sets
// on both tracks) its buffer pool poisons each buffer at Put and checks
// the poison at Get (instrument.WithBytePoison), so a use after Put
// corrupts every time and a write after Put is counted as dirty; the modes
// without a buffer pool (unpooled, never-reset, shared-buffer) ignore it.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	otelruntime "go.opentelemetry.io/contrib/instrumentation/runtime"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/promexport"
)

// maxBuf is the largest buffer a pool keeps: a larger one is dropped at Put.
const maxBuf = 256 << 10

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "csvjson:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string) error {
	addr := getenv("HTTP_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	track, err := instrument.ParseTrack(or(getenv("GRAY_STATUS"), "false"), or(getenv("POOL_MODE"), "pooled"))
	if err != nil {
		return err
	}
	pools := instrument.NewRegistry()
	var poison []instrument.BytesOption
	switch getenv("POOLPARITY_POISON") {
	case "", "0", "false":
	case "1", "true":
		poison = append(poison, instrument.WithBytePoison())
	default:
		return fmt.Errorf("POOLPARITY_POISON %q: want 1 or 0", getenv("POOLPARITY_POISON"))
	}
	bufs, err := newBuffers(track.PoolMode, pools, poison...)
	if err != nil {
		return err
	}

	// One Prometheus registry, every series on it labelled with the track.
	reg := prometheus.NewRegistry()
	tracked := promexport.WithTrack(reg, track)
	exporter, err := otelprom.New(otelprom.WithRegisterer(tracked))
	if err != nil {
		return fmt.Errorf("creating the OpenTelemetry Prometheus exporter: %w", err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = meters.Shutdown(context.Background()) }()
	if err := otelruntime.Start(otelruntime.WithMeterProvider(meters)); err != nil {
		return fmt.Errorf("starting the runtime instrumentation: %w", err)
	}
	for _, c := range []prometheus.Collector{
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		promexport.NewCollector(pools),
	} {
		if err := tracked.Register(c); err != nil {
			return fmt.Errorf("registering a collector: %w", err)
		}
	}

	mux := http.NewServeMux()
	mux.Handle("POST /convert", otelhttp.NewHandler(convert(bufs), "convert", otelhttp.WithMeterProvider(meters)))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// buffers gives the handler its JSON buffers, as POOL_MODE says.
type buffers struct {
	get func() *bytes.Buffer
	put func(*bytes.Buffer)
	// putBeforeWrite is use-after-put's misuse: the buffer goes back to the
	// pool before the response is written from its bytes.
	putBeforeWrite bool
}

func newBuffers(mode string, pools *instrument.Registry, poison ...instrument.BytesOption) (buffers, error) {
	var (
		p   *instrument.Pool[*bytes.Buffer]
		err error
	)
	switch mode {
	case "unpooled":
		return buffers{get: func() *bytes.Buffer { return new(bytes.Buffer) }, put: func(*bytes.Buffer) {}}, nil
	case "pooled", "never-put", "use-after-put":
		// NewBufferPool resets each buffer at Put and drops those over maxBuf.
		p, err = instrument.NewBufferPool("json_buf", maxBuf, poison...)
	case "shared-buffer":
		// The misuse: one buffer for every request, reset after each, no lock.
		shared := new(bytes.Buffer)
		return buffers{get: func() *bytes.Buffer { return shared }, put: func(b *bytes.Buffer) { b.Reset() }}, nil
	case "never-reset":
		// The misuse: a pool of buffers with a size cap and no reset.
		p, err = instrument.New("json_buf",
			instrument.WithNew(func() *bytes.Buffer { return new(bytes.Buffer) }),
			instrument.WithKeep(func(b *bytes.Buffer) bool { return b.Cap() <= maxBuf }))
	default:
		return buffers{}, fmt.Errorf("POOL_MODE %q: want unpooled, pooled, never-reset, never-put, use-after-put or shared-buffer", mode)
	}
	if err != nil {
		return buffers{}, err
	}
	if err := pools.Register(p); err != nil {
		return buffers{}, err
	}
	if mode == "never-put" {
		// The misuse: a code path that takes a buffer and never puts it back.
		return buffers{get: p.Get, put: func(*bytes.Buffer) {}}, nil
	}
	return buffers{get: p.Get, put: p.Put, putBeforeWrite: mode == "use-after-put"}, nil
}

// convert answers a CSV body as a JSON array with one object per record,
// keyed by the header line's names.
func convert(bufs buffers) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		records, err := csv.NewReader(http.MaxBytesReader(w, r.Body, 1<<20)).ReadAll()
		if err == nil && len(records) == 0 {
			err = errors.New("no header line")
		}
		if err != nil {
			http.Error(w, "reading the CSV body: "+err.Error(), http.StatusBadRequest)
			return
		}
		header := records[0]
		rows := make([]map[string]string, 0, len(records)-1)
		for _, rec := range records[1:] {
			row := make(map[string]string, len(header))
			for i, name := range header {
				row[name] = rec[i]
			}
			rows = append(rows, row)
		}
		// The array is written into the buffer one object at a time, as a
		// streaming encoder does: an unpooled buffer grows step by step.
		buf := bufs.get()
		put := true
		defer func() {
			if put {
				bufs.put(buf)
			}
		}()
		enc := json.NewEncoder(buf)
		buf.WriteByte('[')
		for i, row := range rows {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := enc.Encode(row); err != nil {
				http.Error(w, "encoding the JSON: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		buf.WriteString("]\n")
		w.Header().Set("Content-Type", "application/json")
		out := buf.Bytes()
		if bufs.putBeforeWrite {
			bufs.put(buf) // the misuse: out still points into the pooled buffer
			put = false
		}
		_, _ = w.Write(out)
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

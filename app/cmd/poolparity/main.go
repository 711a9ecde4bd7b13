// Command poolparity is the reference service: a JSON API over Redis whose
// hot paths take their buffers from instrumented sync.Pools (POOL_MODE=pooled)
// or allocate them plainly (POOL_MODE=unpooled), with the track
// (GRAY_STATUS) and the mode as constant labels on every metric.
//
// Every setting is an environment variable and a flag; run with -h to list
// them.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/metrics"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/service"
	"github.com/poolparity/poolparity/internal/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "poolparity", err))
}

// run parses the configuration (a bad setting is exit 2) and serves until
// ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.Parse("poolparity", args, getenv, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	log, err := cli.NewLogger(stdout, cfg.LogLevel)
	if err != nil {
		return err
	}
	redis.SetLogger(telemetry.RedisLogger{Log: log}) // go-redis's logger is process-wide
	// The runtime has applied a GOGC variable already; the -gogc flag is applied here.
	if percent, set, _ := cfg.GCPercent(); set {
		debug.SetGCPercent(percent)
	}
	gc := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(gc)
	log.Info("go runtime", "gogc", gc[0].Value.Uint64(), "gomemlimit_bytes", gc[1].Value.Uint64())
	return service.Run(ctx, cfg, log)
}

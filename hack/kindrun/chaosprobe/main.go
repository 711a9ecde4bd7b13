// Command chaosprobe is the kind run's client inside the cluster for the chaos step
// (hack/kindrun): it sends bounded keep-alive load (internal/loadgen) to the release's Service
// and classifies every answer, and it writes items and reads them back byte for byte. The
// harness drives it over a port-forward, through a small HTTP API on -listen:
//
//	POST /load/start?rps=R&concurrency=C&fresh=F&duration=D
//	                                                  start the load (one at a time): R req/s on C
//	                                                  keep-alive connections, F more on new ones
//	GET  /load/counts                                 the counts so far (Counts)
//	POST /load/stop                                   stop it; the final counts
//	POST /items/write?set=S&n=N                       PUT N new items of set S (Written)
//	POST /items/verify?set=S                          GET every acknowledged item of S (Verified)
//
// A request counts as failed when it got no HTTP answer (refused, reset, timed out: what an
// emptied Service gives) or a 5xx; a 5xx with the service's JSON error body is counted apart,
// since that is the service answering that it cannot serve, not the network failing.
//
// It targets one host name (-target, a Service) and, as the load generator, only from inside a
// pod.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "chaosprobe", err))
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaosprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "base URL of the service, e.g. http://poolparity:80")
	listen := fs.String("listen", ":8080", "address of the control API")
	if err := fs.Parse(args); err != nil {
		return cli.Usage(err)
	}
	p, err := newProbe(*target, getenv("KUBERNETES_SERVICE_HOST") != "")
	if err != nil {
		return cli.Usage(err)
	}
	srv := &http.Server{Addr: *listen, Handler: p.routes(), ReadHeaderTimeout: 5 * time.Second}
	errCh := make(chan error, 1)
	go func() { errCh <- srv.ListenAndServe() }()
	fmt.Fprintf(stderr, "chaosprobe: control API on %s, target %s\n", *listen, *target)
	select {
	case err := <-errCh:
		return err
	case <-ctx.Done():
	}
	p.stopLoad()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

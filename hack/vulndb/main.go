// Command vulndb builds a Go vulnerability database directory, laid out as govulncheck's
// `-db file:///DIR` reads it (index/db.json, index/modules.json, index/vulns.json and
// ID/<GO-ID>.json), from the OSV entries that the golang.org/x/vulndb module carries under
// data/osv. It is how `make vulncheck` runs govulncheck offline: the public database cannot be
// reached here, but the module proxy serves that module.
//
//	go run ./hack/vulndb -version v0.0.0-20261105234957-e22db6528018 -out DIR   # the module's data/osv
//	go run ./hack/vulndb -osv DIR -out DIR                                      # any directory of OSV entries
//
// hack/install-tools.sh runs it with the pinned version into its cache
// (~/.cache/poolparity/vulndb-<version>/vulndb) and links that as bin/vulndb.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/poolparity/poolparity/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit(os.Stderr, "vulndb", err))
}

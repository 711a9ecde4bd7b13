package localproc

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// Prometheus is a Prometheus server to start on loopback.
type Prometheus struct {
	// Bin is the prometheus binary; ConfigFile its configuration.
	Bin, ConfigFile string
	// DataDir holds its TSDB (a temporary directory: a run keeps one day).
	DataDir string
	// LogDir receives prometheus.log.
	LogDir string
	// Port is its port on 127.0.0.1, free.
	Port int
	// Env is its whole environment.
	Env []string
}

// StartPrometheus starts p and waits until it is ready (at most a minute).
// It returns the process, which the caller stops, and Prometheus' URL.
func StartPrometheus(ctx context.Context, client *http.Client, p Prometheus) (*Proc, string, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", p.Port)
	proc, err := Start("prometheus", p.Bin, []string{
		"--config.file=" + p.ConfigFile,
		"--storage.tsdb.path=" + filepath.Join(p.DataDir, "prometheus"),
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}, p.Env, p.LogDir)
	if err != nil {
		return nil, "", err
	}
	url := "http://" + addr
	if err := WaitUntil(ctx, proc, 60*time.Second, 250*time.Millisecond, "prometheus", HTTPOK(client, url+"/-/ready")); err != nil {
		return proc, url, err
	}
	return proc, url, nil
}

// WaitScraping waits (at most a minute) until the Prometheus behind q has
// scraped n targets up among those selector (PromQL label matchers without
// braces) picks: a fresh Prometheus scrapes for the first time several
// seconds after it starts. p is the Prometheus process.
func WaitScraping(ctx context.Context, p *Proc, q promread.Querier, selector string, n int) error {
	what := fmt.Sprintf("prometheus scraping all %d targets", n)
	return WaitUntil(ctx, p, 60*time.Second, 500*time.Millisecond, what, func(ctx context.Context) error {
		v, _, _, err := q.Query(ctx, `sum(up{`+selector+`})`, time.Now())
		if err != nil {
			return err
		}
		if vec, ok := v.(model.Vector); ok && len(vec) == 1 && int(vec[0].Value) == n {
			return nil
		}
		return fmt.Errorf("targets not up yet (sum(up) = %v)", v)
	})
}

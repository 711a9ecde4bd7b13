package localmode

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/localproc"
)

// trackRun is one track of a run.
type trackRun struct {
	name, gray string // stable or gray; its gray_status
	Track
	url  string // base URL, resolved
	host string // host:port
	// scrapeHost is the host:port Prometheus scrapes: host, or ScrapeURL's.
	scrapeHost string
	port       string // the port, PORT of its command
	// bin, when set, is BIN in its command's environment: the build it
	// runs (Config.GrayPackage).
	bin string
	// proc is its command's process, nil without a command.
	proc *localproc.Proc
}

func newTrack(name string, t Track) *trackRun {
	gray := instrument.GrayStatusStable
	if name == "gray" {
		gray = instrument.GrayStatusGray
	}
	return &trackRun{name: name, gray: gray, Track: t}
}

// label names a track in the report's title: its pool mode, or its name.
func (t Track) label(name string) string {
	if t.Mode != "" {
		return name + " (" + t.Mode + ")"
	}
	return name
}

// desc describes the track on one line.
func (t *trackRun) desc() string {
	s := t.url
	if t.Mode != "" {
		s += " (" + t.Mode + ")"
	}
	return s
}

// refuse returns the error of a track refused before any load.
func (t *trackRun) refuse(format string, a ...any) error {
	return fmt.Errorf("%s track %w: %s", t.name, ErrRefused, fmt.Sprintf(format, a...))
}

// resolve sets the track's URL, host and port: its URL's, or a free
// loopback port's. A command's port must be free.
func (t *trackRun) resolve(ports *localproc.Ports) error {
	raw := t.URL
	if raw == "" {
		port, err := ports.Reserve(0)
		if err != nil {
			return fmt.Errorf("%s track's port: %w", t.name, err)
		}
		raw = "http://127.0.0.1:" + strconv.Itoa(port)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s track's URL: %w", t.name, err) // Validate has refused it already
	}
	t.url, t.host, t.port = strings.TrimRight(raw, "/"), u.Host, u.Port()
	t.scrapeHost = t.host
	if t.ScrapeURL != "" {
		su, err := url.Parse(t.ScrapeURL)
		if err != nil {
			return fmt.Errorf("%s track's scrape URL: %w", t.name, err) // Validate has refused it already
		}
		t.scrapeHost = su.Host
	}
	if t.Cmd != "" && t.URL != "" {
		port, err := strconv.Atoi(t.port)
		if err == nil {
			_, err = ports.Reserve(port)
		}
		if err != nil {
			return t.refuse("%v (the port its command is to listen on must be free)", err)
		}
	}
	return nil
}

// commandEnv is the environment of t's command: environ without the
// variables the run sets (PORT, GRAY_STATUS, PoisonEnv, BIN when it sets it), those
// Config.ClearEnv clears and the track's own Env's, then PORT, GRAY_STATUS,
// BIN when the run built the track (Config.GrayPackage), PoisonEnv=1 with
// Config.Poison, and the track's Env, which wins.
func (r *runner) commandEnv(environ []string, t *trackRun) []string {
	set, drop := []string{"PORT=" + t.port, "GRAY_STATUS=" + t.gray}, []string{"PORT", "GRAY_STATUS", PoisonEnv}
	if t.bin != "" {
		set, drop = append(set, "BIN="+t.bin), append(drop, "BIN")
	}
	if r.cfg.Poison {
		set = append(set, PoisonEnv+"=1")
	}
	drop = slices.Concat(drop, r.cfg.ClearEnv, envKeys(t.Env))
	return localproc.Environ(environ, drop, append(set, t.Env...)...)
}

// startTrack starts the track's command if it has one, waits until its
// metrics answer and checks the track and pool mode they carry.
func (r *runner) startTrack(ctx context.Context, t *trackRun) error {
	if err := t.resolve(r.ports); err != nil {
		return err
	}
	metrics := t.url + r.cfg.MetricsPath
	if t.Cmd == "" {
		if err := localproc.WaitUntil(ctx, nil, 10*time.Second, 250*time.Millisecond, "its metrics at "+metrics, localproc.HTTPOK(r.client, metrics)); err != nil {
			return t.refuse("%v", err)
		}
		return r.checkLabels(ctx, t)
	}
	p, err := localproc.Start(t.name, "/bin/sh", []string{"-c", t.Cmd}, r.commandEnv(os.Environ(), t), r.logDir)
	if err != nil {
		return t.refuse("%v", err)
	}
	r.procs.Add(p)
	t.proc = p
	what := fmt.Sprintf("its command (sh -c %q with PORT=%s), its metrics at %s", t.Cmd, t.port, metrics)
	if err := localproc.WaitUntil(ctx, p, 60*time.Second, 250*time.Millisecond, what, localproc.HTTPOK(r.client, metrics)); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return t.refuse("%v", err)
	}
	return r.checkLabels(ctx, t)
}

// checkLabels reads the track's metrics and refuses it when their
// gray_status names the other track, or their pool_mode is not the
// expected one (when one is expected).
func (r *runner) checkLabels(ctx context.Context, t *trackRun) error {
	metrics := t.url + r.cfg.MetricsPath
	labels, err := r.readLabels(ctx, metrics, "gray_status", "pool_mode")
	if err != nil {
		if t.Mode == "" {
			return nil // nothing to check: Prometheus will say whether it scrapes them
		}
		return t.refuse("its metrics at %s could not be read to check pool_mode=%q: %v", metrics, t.Mode, err)
	}
	if g := labels["gray_status"]; len(g) > 0 && !slices.Equal(g, []string{t.gray}) {
		return t.refuse("its metrics at %s carry gray_status=%s, want %s: is this the other build, or a port mixed up?", metrics, strings.Join(g, ","), t.gray)
	}
	if t.Mode == "" {
		return nil
	}
	switch m := labels["pool_mode"]; {
	case len(m) == 0:
		return t.refuse("its metrics at %s carry no pool_mode label, want pool_mode=%s (or give no expected mode)", metrics, t.Mode)
	case !slices.Equal(m, []string{t.Mode}):
		return t.refuse("its metrics at %s carry pool_mode=%s, want %s", metrics, strings.Join(m, ","), t.Mode)
	}
	return nil
}

// readLabels GETs a metrics page in the Prometheus text format and returns,
// for each of names, the values its series carry, sorted.
func (r *runner) readLabels(ctx context.Context, metricsURL string, names ...string) (map[string][]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", metricsURL, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("not the Prometheus text format: %w", err)
	}
	seen := map[string]map[string]bool{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if slices.Contains(names, lp.GetName()) {
					if seen[lp.GetName()] == nil {
						seen[lp.GetName()] = map[string]bool{}
					}
					seen[lp.GetName()][lp.GetValue()] = true
				}
			}
		}
	}
	out := map[string][]string{}
	for name, vals := range seen {
		out[name] = slices.Sorted(maps.Keys(vals))
	}
	return out, nil
}

// envKeys are the keys of KEY=value entries.
func envKeys(env []string) []string {
	keys := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	return keys
}

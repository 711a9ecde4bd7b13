package localmode_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/localmode"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*localmode.Config)
		want   string // a substring of the error; empty: valid
	}{
		{"two commands on free ports are valid", func(*localmode.Config) {}, ""},
		{"two URLs already running are valid", func(c *localmode.Config) {
			c.Stable, c.Gray = localmode.Track{URL: "http://127.0.0.1:8081"}, localmode.Track{URL: "http://localhost:8082/"}
		}, ""},
		{"a command with the URL of its port is valid", func(c *localmode.Config) { c.Gray.URL = "http://127.0.0.1:8082" }, ""},
		{"a track with neither command nor URL is refused", func(c *localmode.Config) { c.Gray = localmode.Track{} }, "GRAY: give a command"},
		{"a URL off loopback is refused", func(c *localmode.Config) { c.Stable = localmode.Track{URL: "http://10.0.0.5:8080"} }, "STABLE: URL must be an http URL on loopback"},
		{"a URL with a path is refused", func(c *localmode.Config) { c.Stable = localmode.Track{URL: "http://127.0.0.1:8080/api"} }, "without a path"},
		{"a command's URL without a port is refused", func(c *localmode.Config) { c.Stable.URL = "http://127.0.0.1" }, "needs a port"},
		{"the same URL twice is refused", func(c *localmode.Config) {
			c.Stable, c.Gray = localmode.Track{URL: "http://127.0.0.1:8081"}, localmode.Track{URL: "http://127.0.0.1:8081"}
		}, "are the same"},
		{"no requests file is refused", func(c *localmode.Config) { c.RequestsFile = "" }, "REQUESTS is required"},
		{"a zero rate is refused", func(c *localmode.Config) { c.RPS = 0 }, "RPS must be between 1 and 5000"},
		{"all the load on gray is refused", func(c *localmode.Config) { c.GrayWeight = 1 }, "GRAY_WEIGHT"},
		{"no load on gray is refused", func(c *localmode.Config) { c.GrayWeight = 0 }, "GRAY_WEIGHT"},
		{"a run too short for the rules is refused", func(c *localmode.Config) { c.Duration = 10 * time.Second }, "DURATION must be between 20s and 2h"},
		{"an unbounded in-flight count is refused", func(c *localmode.Config) { c.Concurrency = 0 }, "CONCURRENCY"},
		{"a metrics path without a slash is refused", func(c *localmode.Config) { c.MetricsPath = "metrics" }, "METRICS_PATH"},
		{"a window that is no duration is refused", func(c *localmode.Config) { c.Rules.Window = "one minute" }, "-window"},
		{"no differential check is valid", func(c *localmode.Config) { c.DiffSample = 0 }, ""},
		{"a negative sample is refused", func(c *localmode.Config) { c.DiffSample = -1 }, "DIFF_SAMPLE"},
		{"a sample over diffcheck's bound is refused", func(c *localmode.Config) { c.DiffSample = 5001 }, "DIFF_SAMPLE"},
		{"fields that legitimately differ are valid", func(c *localmode.Config) { c.DiffIgnore = []string{".id", ".items[*].created_at", "status"} }, ""},
		{"a field path that is none is refused", func(c *localmode.Config) { c.DiffIgnore = []string{".a[b"} }, "DIFF_IGNORE"},
		{"excluded methods and endpoints are valid", func(c *localmode.Config) { c.DiffExclude = []string{"DELETE", "PUT /api/v1/items/{n}"} }, ""},
		{"an excluded request that is no method nor endpoint is refused", func(c *localmode.Config) { c.DiffExclude = []string{"writes"} }, "DIFF_EXCLUDE"},
		{"an empty output directory is refused", func(c *localmode.Config) { c.OutDir = "" }, "OUT must not be empty"},
		{"the counts gate is valid", func(c *localmode.Config) { c.Gate = "counts" }, ""},
		{"the retired sequential gate is refused", func(c *localmode.Config) { c.Gate = "sequential" }, "was retired: use counts"},
		{"an unknown gate is refused", func(c *localmode.Config) { c.Gate = "strict" }, "GATE: unknown gate"},
		{"a sub-second scrape interval is refused", func(c *localmode.Config) { c.ScrapeInterval = time.Millisecond }, "SCRAPE_INTERVAL"},
		{"environment entries are valid", func(c *localmode.Config) { c.Gray.Env = []string{"POOL_MODE=pooled", "EMPTY="} }, ""},
		{"an environment entry without = is refused", func(c *localmode.Config) { c.Gray.Env = []string{"POOL_MODE"} }, "GRAY: ENV \"POOL_MODE\" is not KEY=value"},
		{"a scrape URL off loopback is refused", func(c *localmode.Config) { c.Stable.ScrapeURL = "http://10.0.0.5:9464" }, "STABLE: SCRAPE_URL"},
		{"a profile root off loopback is refused", func(c *localmode.Config) { c.Gray.PprofURL = "http://10.0.0.5:6060/debug/pprof/" }, "GRAY: PPROF"},
		{"profiles of one track only are refused", func(c *localmode.Config) { c.ProfileSeconds, c.Gray.PprofURL = 5, "http://127.0.0.1:6060/debug/pprof/" }, "both -stable-pprof and -gray-pprof"},
		{"an hour of profiling is refused", func(c *localmode.Config) { c.ProfileSeconds = 3600 }, "PROFILE_SECONDS"},
		{"waves larger than the in-flight bound are refused", func(c *localmode.Config) { c.Burst = c.Concurrency + 1 }, "BURST"},
		{"a job that is no label value is refused", func(c *localmode.Config) { c.Job = "\xff" }, "JOB"},
		{"gray's package without a command is valid", func(c *localmode.Config) { c.Gray.Cmd, c.GrayPackage = "", "./cmd/svc" }, ""},
		{"a race phase with gray's package is valid", func(c *localmode.Config) {
			c.GrayPackage, c.RaceDuration = "example.com/svc/cmd/svc", localmode.DefaultRaceDuration
		}, ""},
		{"a race phase without gray's package is refused", func(c *localmode.Config) { c.RaceDuration = time.Second }, "-race-duration needs -gray-pkg"},
		{"a negative race duration is refused", func(c *localmode.Config) { c.GrayPackage, c.RaceDuration = "./cmd/svc", -time.Second }, "RACE_DURATION"},
		{"a package that looks like a flag is refused", func(c *localmode.Config) { c.GrayPackage = "-toolexec=x" }, "GRAY_PKG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := localmode.Default()
			c.Stable.Cmd, c.Gray.Cmd, c.RequestsFile = "./stable", "./gray", "requests.txt"
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, localmode.ErrInvalid)):
				t.Errorf("Validate() = %v, want an ErrInvalid naming %q", err, tt.want)
			}
		})
	}
	t.Run("every problem is named at once", func(t *testing.T) {
		err := localmode.Config{}.Validate()
		for _, w := range []string{"STABLE", "GRAY", "REQUESTS", "RPS", "DURATION", "OUT", "GATE"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Validate() of the zero Config = %v, want it to name %s", err, w)
			}
		}
	})
}

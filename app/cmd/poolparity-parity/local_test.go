package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/localmode"
	"github.com/poolparity/poolparity/internal/parity"
)

// runLocalArgs runs `poolparity-parity local args...` with the environment in envs and
// returns the exit status, stdout and stderr.
func runLocalArgs(t *testing.T, envs map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := cli.Exit(&stderr, "poolparity-parity", run(ctx, append([]string{"local"}, args...), env(envs), &stdout, &stderr))
	return code, stdout.String(), stderr.String()
}

// writeFile writes text to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseLocalConfig(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(c localmode.Config) string // what is wrong, or ""
	}{
		{"the defaults", []string{"-stable-cmd", "./a", "-gray-cmd", "./b", "-requests", "r.txt"}, nil, func(c localmode.Config) string {
			d := localmode.Default()
			if c.Rules.Window != "1m" || c.Rules.For != "30s" || c.RPS != d.RPS || c.Duration != d.Duration || c.GrayWeight != 0.5 ||
				c.DiffSample != d.DiffSample || !c.DiffUnderLoad || c.DiffIgnore != nil || c.DiffExclude != nil || c.Gate != "confirmed" || c.MetricsPath != "/metrics" || c.PrometheusBin != "" {
				return fmt.Sprintf("%+v, want the defaults", c)
			}
			return ""
		}},
		{"variables set, flags win, rules flags taken", []string{"-gray-url", "http://127.0.0.1:9002", "-rps", "80", "-set", "rules.http.metrics=semconv", "-window", "5m"},
			map[string]string{"PARITY_LOCAL_STABLE_URL": "http://127.0.0.1:9001", "PARITY_LOCAL_GRAY_URL": "http://127.0.0.1:9999", "PARITY_LOCAL_REQUESTS": "r.txt",
				"PARITY_LOCAL_RPS": "10", "PARITY_LOCAL_GRAY_MODE": "pooled", "PARITY_LOCAL_DIFF_SAMPLE": "0", "PARITY_LOCAL_GATE": "counts"},
			func(c localmode.Config) string {
				if c.Stable.URL != "http://127.0.0.1:9001" || c.Gray.URL != "http://127.0.0.1:9002" || c.Gray.Mode != "pooled" || c.RPS != 80 ||
					c.DiffSample != 0 || c.Gate != "counts" || c.Rules.Window != "5m" || c.Rules.For != "30s" || len(c.Rules.Sets) != 1 {
					return fmt.Sprintf("%+v", c)
				}
				return ""
			}},
	}
	tests = append(tests, struct {
		name  string
		args  []string
		env   map[string]string
		check func(c localmode.Config) string
	}{"the demo's flags: environment, scrape and profile URLs, load shape, own rules", []string{"-stable-cmd", "./a", "-gray-cmd", "./b", "-requests", "r.txt",
		"-stable-env", "POOL_MODE=unpooled", "-gray-env", "POOL_MODE=pooled", "-gray-env", "FAULT_LATENCY=40ms", "-clear-env", "REDIS_,OTEL_", "-clear-env", "FAULT_",
		"-gray-scrape-url", "http://127.0.0.1:9464", "-stable-pprof", "http://127.0.0.1:6060/debug/pprof/", "-gray-pprof", "http://127.0.0.1:6061/debug/pprof/",
		"-profile-seconds", "3", "-random", "-seed", "7", "-burst", "8", "-diff-requests", "reads.txt", "-rules-file", "my.rules.yml", "-job", "svc",
		"-scrape-interval", "2s", "-title", "t", "-record", "rec.json.gz"}, nil, func(c localmode.Config) string {
		if strings.Join(c.Stable.Env, " ") != "POOL_MODE=unpooled" || strings.Join(c.Gray.Env, " ") != "POOL_MODE=pooled FAULT_LATENCY=40ms" ||
			strings.Join(c.ClearEnv, " ") != "REDIS_ OTEL_ FAULT_" || c.Gray.ScrapeURL != "http://127.0.0.1:9464" || c.Stable.ScrapeURL != "" ||
			c.Stable.PprofURL != "http://127.0.0.1:6060/debug/pprof/" || c.Gray.PprofURL != "http://127.0.0.1:6061/debug/pprof/" || c.ProfileSeconds != 3 ||
			!c.Random || c.Seed != 7 || c.Burst != 8 || c.DiffRequestsFile != "reads.txt" || c.RulesFile != "my.rules.yml" || c.Job != "svc" ||
			c.ScrapeInterval != 2*time.Second || c.Title != "t" || c.Record != "rec.json.gz" {
			return fmt.Sprintf("%+v", c)
		}
		return ""
	}})
	tests = append(tests, struct {
		name  string
		args  []string
		env   map[string]string
		check func(c localmode.Config) string
	}{"the differential check's flags: where it runs, what it ignores and leaves out", []string{"-stable-cmd", "./a", "-gray-cmd", "./b", "-requests", "r.txt",
		"-diff-under-load=false", "-diff-ignore", ".id, .items[*].created_at,,status", "-diff-exclude", "DELETE,PUT /api/v1/items/{n}"},
		map[string]string{"PARITY_LOCAL_DIFF_EXCLUDE": "POST"}, func(c localmode.Config) string {
			if c.DiffUnderLoad || strings.Join(c.DiffIgnore, "|") != ".id|.items[*].created_at|status" || strings.Join(c.DiffExclude, "|") != "DELETE|PUT /api/v1/items/{n}" {
				return fmt.Sprintf("under load %v, ignore %q, exclude %q", c.DiffUnderLoad, c.DiffIgnore, c.DiffExclude)
			}
			return ""
		}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseLocalConfig(tt.args, env(tt.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(c); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestLocalRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.txt", "GET /thumbnail/img-1?w=32\n")
	// A service whose metrics say it is pooled.
	pooled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `http_requests_total{gray_status="true",pool_mode="pooled"} 1`)
	}))
	defer pooled.Close()
	unpooled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `http_requests_total{gray_status="false",pool_mode="unpooled"} 1`)
	}))
	defer unpooled.Close()
	tests := []struct {
		name   string
		args   []string
		status int
		want   string // a substring of stderr
	}{
		{"a malformed line names the file and the line", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL,
			"-requests", writeFile(t, dir, "bad.txt", "GET /a\n\nFETCH /b\n")}, parity.ExitUsage, "bad.txt:3: unknown method \"FETCH\""},
		{"a requests file off loopback is refused", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL,
			"-requests", writeFile(t, dir, "far.txt", "GET http://10.1.2.3/a\n")}, parity.ExitUsage, "far.txt: request of line 1"},
		{"a missing requests file is a usage error", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL,
			"-requests", filepath.Join(dir, "absent.txt")}, parity.ExitUsage, "absent.txt"},
		{"a stable command that exits at once is refused, named", []string{"-stable-cmd", "echo no such build >&2; exit 3", "-gray-url", pooled.URL,
			"-requests", good}, parity.ExitError, "stable track refused before any load"},
		{"a URL with the wrong pool mode is refused, named", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL, "-gray-mode", "unpooled",
			"-requests", good}, parity.ExitError, "gray track refused before any load: its metrics at " + pooled.URL + "/metrics carry pool_mode=pooled, want unpooled"},
		{"a URL answering as the other track is refused, named", []string{"-stable-url", pooled.URL, "-gray-url", unpooled.URL,
			"-requests", good}, parity.ExitError, "stable track refused before any load: its metrics at " + pooled.URL + "/metrics carry gray_status=true, want false"},
		{"a bad flag is a usage error", []string{"-rps", "fast"}, parity.ExitUsage, "invalid value"},
		{"a field path that is none is a usage error", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL, "-requests", good,
			"-diff-ignore", ".id,.items[x]"}, parity.ExitUsage, `DIFF_IGNORE: diffcheck: invalid options: ignore: ".items[x]"`},
		{"an excluded request that is no method is a usage error", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL, "-requests", good,
			"-diff-exclude", "get"}, parity.ExitUsage, `DIFF_EXCLUDE: "get": want a method`},
		{"excluding every request is a usage error", []string{"-stable-url", unpooled.URL, "-gray-url", pooled.URL, "-requests", good,
			"-diff-exclude", "GET,POST,PUT"}, parity.ExitUsage, "DIFF_EXCLUDE leaves none of the requests of " + good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			// Prometheus is never reached: /bin/true stands for it.
			code, stdout, stderr := runLocalArgs(t, nil, append(tt.args, "-out", out, "-prometheus", "/bin/true")...)
			if code != tt.status || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d naming %q (stdout %q)", code, stderr, tt.status, tt.want, stdout)
			}
			if tt.status == parity.ExitUsage && strings.Count(strings.TrimSpace(stderr), "\n") > 0 && !strings.Contains(stderr, "Usage") && !strings.Contains(stderr, "usage") {
				t.Errorf("stderr %q, want one line", stderr)
			}
			// Before any load: Prometheus was not configured, nothing was sent.
			if _, err := os.Stat(filepath.Join(out, "prometheus.yml")); err == nil {
				t.Error("prometheus.yml written: the run went past the tracks' check")
			}
			if strings.Contains(stdout, "load ") {
				t.Errorf("stdout %q: the load started", stdout)
			}
		})
	}
	t.Run("the command's own log is named", func(t *testing.T) {
		_, _, stderr := runLocalArgs(t, nil, "-stable-cmd", "echo no such build >&2; exit 3", "-gray-url", pooled.URL,
			"-requests", good, "-out", filepath.Join(t.TempDir(), "out"), "-prometheus", "/bin/true")
		if !strings.Contains(stderr, "no such build") || !strings.Contains(stderr, "exit status 3") {
			t.Errorf("stderr %q, want the command's exit status and last lines", stderr)
		}
	})
}

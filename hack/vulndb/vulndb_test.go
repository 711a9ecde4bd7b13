package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/testtool"
)

// osvSet is a tiny synthetic set of OSV entries: a fixed vulnerability, one introduced again
// after its fix in one module and fixed only in a prerelease in another, and a standard library
// one, plus a file that is not an entry.
var osvSet = map[string]string{
	"GO-2099-0001.json": `{
  "schema_version": "1.3.1",
  "id": "GO-2099-0001",
  "modified": "2099-01-02T03:04:05Z",
  "aliases": ["CVE-2099-1"],
  "affected": [{"package": {"name": "example.com/a", "ecosystem": "Go"},
    "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.2.0"}]}]}]
}`,
	"GO-2099-0002.json": `{
  "id": "GO-2099-0002",
  "modified": "2099-03-01T00:00:00Z",
  "affected": [
    {"package": {"name": "example.com/a"},
      "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.1"}, {"introduced": "1.1.0"}]}]},
    {"package": {"name": "example.com/b"},
      "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "2.0.0-beta.2"}, {"fixed": "2.0.0-rc.1"}]}]}]
}`,
	"GO-2099-0003.json": `{
  "id": "GO-2099-0003",
  "modified": "0001-01-01T00:00:00Z",
  "affected": [{"package": {"name": "stdlib"},
    "ranges": [{"type": "SEMVER", "events": [{"introduced": "1.26.0-0"}, {"fixed": "1.26.10"}]}],
    "ecosystem_specific": {"imports": [{"path": "net/http", "symbols": ["Serve"]}]}}]
}`,
	"README.md": "not an entry",
}

func writeSet(t *testing.T, set map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range set {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBuild(t *testing.T) {
	src := Source{Dir: writeSet(t, osvSet), Name: "the synthetic set"}
	out := filepath.Join(t.TempDir(), "db")
	sum, err := Build(context.Background(), src, out)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Source: "the synthetic set", Entries: 3, Modules: 3, Modified: time.Date(2099, 3, 1, 0, 0, 0, 0, time.UTC)}
	if !sum.Modified.Equal(want.Modified) || sum.String() != want.String() {
		t.Errorf("summary %v, want %v", sum, want)
	}

	files := map[string]string{
		"index/db.json": `{"modified":"2099-03-01T00:00:00Z"}`,
		"index/modules.json": `[` +
			`{"path":"example.com/a","vulns":[{"id":"GO-2099-0001","modified":"2099-01-02T03:04:05Z","fixed":"1.2.0"},{"id":"GO-2099-0002","modified":"2099-03-01T00:00:00Z"}]},` +
			`{"path":"example.com/b","vulns":[{"id":"GO-2099-0002","modified":"2099-03-01T00:00:00Z","fixed":"2.0.0-rc.1"}]},` +
			`{"path":"stdlib","vulns":[{"id":"GO-2099-0003","modified":"0001-01-01T00:00:00Z","fixed":"1.26.10"}]}]`,
		"index/vulns.json": `[{"id":"GO-2099-0001","modified":"2099-01-02T03:04:05Z","aliases":["CVE-2099-1"]},` +
			`{"id":"GO-2099-0002","modified":"2099-03-01T00:00:00Z"},{"id":"GO-2099-0003","modified":"0001-01-01T00:00:00Z"}]`,
		"SOURCE.txt": "the synthetic set: 3 OSV entries, 3 modules, modified 2099-03-01T00:00:00Z\n",
	}
	for name, body := range osvSet {
		if strings.HasSuffix(name, ".json") {
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(body)); err != nil {
				t.Fatal(err)
			}
			files["ID/"+name] = b.String()
		}
	}
	var got []string
	err = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, path)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Fatalf("the database holds %q, want %q", got, names)
	}
	for name, body := range files {
		if g := readFile(t, filepath.Join(out, name)); g != body {
			t.Errorf("%s:\n%s\nwant:\n%s", name, g, body)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".db.tmp-*")); len(left) > 0 {
		t.Errorf("temporary directories left behind: %q", left)
	}

	t.Run("govulncheck reads it: an entry is listed below its fixed version only", func(t *testing.T) {
		govulncheck, err := filepath.Abs(filepath.Join("..", "..", "bin", "govulncheck"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(govulncheck); err != nil {
			testtool.SkipOrFail(t, "bin/govulncheck not found (run make tools-vuln): %v", err)
		}
		queries := []struct {
			module string
			want   []string
		}{
			{"example.com/a@v1.0.0", []string{"GO-2099-0001", "GO-2099-0002"}},
			{"example.com/a@v1.2.0", []string{"GO-2099-0002"}}, // introduced again at 1.1.0, never fixed
			{"example.com/b@v2.0.0-rc.1", nil},
			{"example.com/c@v1.0.0", nil},
		}
		for _, q := range queries {
			cmd := exec.Command(govulncheck, "-mode", "query", "-format", "json", "-db", "file://"+out, q.module)
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("govulncheck -mode query %s: %v\n%s", q.module, err, b)
			}
			var ids []string
			for dec := json.NewDecoder(bytes.NewReader(b)); ; {
				var msg struct {
					OSV *struct{ ID string } `json:"osv"`
				}
				if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("reading govulncheck's output for %s: %v", q.module, err)
				}
				if msg.OSV != nil {
					ids = append(ids, msg.OSV.ID)
				}
			}
			if slices.Sort(ids); !slices.Equal(ids, q.want) {
				t.Errorf("%s: govulncheck lists %q, want %q", q.module, ids, q.want)
			}
		}
	})
}

func TestBuildRefuses(t *testing.T) {
	entry := func(id, fixed string) string {
		return `{"id": "` + id + `", "affected": [{"package": {"name": "example.com/a"}, "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "` + fixed + `"}]}]}]}`
	}
	tests := []struct {
		name     string
		set      map[string]string
		existing bool
		want     string
	}{
		{"an entry whose file is not named after its id", map[string]string{"GO-2099-0001.json": entry("GO-2099-0002", "1.0.0")}, false, `its id is "GO-2099-0002"`},
		{"a version that is not semantic", map[string]string{"GO-2099-0001.json": entry("GO-2099-0001", "v1.0")}, false, `version "v1.0" is not semantic`},
		{"a file that is not JSON", map[string]string{"GO-2099-0001.json": "{"}, false, "GO-2099-0001.json: unexpected end of JSON input"},
		{"a directory without entries", map[string]string{"README.md": "x"}, false, "no OSV entries"},
		{"an existing database directory", map[string]string{"GO-2099-0001.json": entry("GO-2099-0001", "1.0.0")}, true, "exists and is not empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "db")
			if tt.existing {
				if err := os.MkdirAll(filepath.Join(out, "index"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Build(context.Background(), Source{Dir: writeSet(t, tt.set)}, out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build: %v, want an error containing %q", err, tt.want)
			}
			if !tt.existing {
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a failed Build left %s behind (%v)", out, err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".db.tmp-*")); len(left) > 0 {
				t.Errorf("temporary directories left behind: %q", left)
			}
		})
	}
}

func TestLatestFixed(t *testing.T) {
	semver := func(events ...event) osvRange { return osvRange{Type: "SEMVER", Events: events} }
	tests := []struct {
		name   string
		ranges []osvRange
		want   string
	}{
		{"no ranges have no fix", nil, ""},
		{"an open range has no fix", []osvRange{semver(event{Introduced: "0"})}, ""},
		{"a fix then a new introduction has no fix", []osvRange{semver(event{Introduced: "0"}, event{Fixed: "1.0.4"}, event{Introduced: "1.1.2"})}, ""},
		{"events out of order, introduced again after the last fix", []osvRange{semver(event{Fixed: "1.0.4"}, event{Introduced: "0"}, event{Introduced: "1.1.2"}, event{Introduced: "1.5.0"}, event{Fixed: "1.1.4"})}, ""},
		{"events out of order, the latest fix holds", []osvRange{semver(event{Fixed: "1.0.0"}, event{Introduced: "0"}, event{Fixed: "0.1.0"}, event{Introduced: "0.5.0"})}, "1.0.0"},
		{"the latest fix of several ranges", []osvRange{semver(event{Introduced: "0"}, event{Fixed: "0.1.0"}), semver(event{Introduced: "0"}, event{Fixed: "0.2.0"})}, "0.2.0"},
		{"pseudo-versions", []osvRange{semver(event{Introduced: "0"}, event{Fixed: "0.0.0-20220824120805-abc"}, event{Introduced: "0.0.0-20230824120805-efg"}, event{Fixed: "0.0.0-20240824120805-hij"})}, "0.0.0-20240824120805-hij"},
		{"a release follows its release candidate", []osvRange{semver(event{Introduced: "0"}, event{Fixed: "1.26.0"}, event{Fixed: "1.26.0-rc.2"})}, "1.26.0"},
		{"ranges other than SEMVER are ignored", []osvRange{{Type: "GIT", Events: []event{{Fixed: "abc"}}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := latestFixed(tt.ranges); got != tt.want {
				t.Errorf("latestFixed = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSemverPrecedence(t *testing.T) {
	// Each version precedes the next (semver.org's example list, then numbers of any width).
	ordered := []string{
		"", // invalid: before every valid version
		"0.0.0-20220824120805-abc", "0.0.0-20240824120805-abc",
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.9.0", "1.10.0", "1.11.0", "1.11.1",
		"2.0.0", "18446744073709551616.0.0",
	}
	for i := range ordered {
		for j := range ordered {
			if got, want := versionLess(ordered[i], ordered[j]), i < j; got != want {
				t.Errorf("versionLess(%q, %q) = %v, want %v", ordered[i], ordered[j], got, want)
			}
		}
	}
	if versionLess("1.0.0+build.2", "1.0.0+build.1") || versionLess("1.0.0+build.1", "1.0.0") {
		t.Error("build metadata must not order versions")
	}
	for _, v := range []string{"", "v1.0.0", "1.0", "1", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0-a..b", "1.0.0+", "1.0.0-a_b", "1.0.0.0"} {
		if _, ok := parseSemver(v); ok {
			t.Errorf("parseSemver(%q) accepted an invalid version", v)
		}
	}
	for _, v := range []string{"0.0.0", "1.2.3-0", "1.2.3-0a", "1.2.3-x-y.7+b.01", "0.0.0-20130808000456-233bccbb1abe"} {
		if _, ok := parseSemver(v); !ok {
			t.Errorf("parseSemver(%q) refused a valid version", v)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"a module version and an output directory are valid", Config{Version: "v0.0.0-20261105234957-e22db6528018", Out: "db"}, ""},
		{"a directory of entries is valid", Config{OSVDir: "osv", Out: "db"}, ""},
		{"no source is refused", Config{Out: "db"}, "set -version"},
		{"two sources are refused", Config{Version: "v1.0.0", OSVDir: "osv", Out: "db"}, "both set"},
		{"a query is not a version", Config{Version: "latest", Out: "db"}, `-version "latest"`},
		{"a version needs its v", Config{Version: "1.0.0", Out: "db"}, `-version "1.0.0"`},
		{"no output directory is refused", Config{OSVDir: "osv"}, "-out is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseDownload(t *testing.T) {
	info := filepath.Join(t.TempDir(), "v1.info")
	if err := os.WriteFile(info, []byte(`{"Version":"v1.0.0","Time":"2026-11-05T23:49:57Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := parseDownload([]byte(`{"Path":"golang.org/x/vulndb","Version":"v1.0.0","Info":"` + info + `","Dir":"/mod/dir"}`))
	if err != nil || m.Dir != "/mod/dir" || !m.Time.Equal(time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC)) {
		t.Errorf("parseDownload = %+v, %v", m, err)
	}
	for _, out := range []string{`{"Error":"golang.org/x/vulndb@v9.9.9: reading ...: 403 Forbidden"}`, `{"Info":"x"}`, `not json`} {
		if _, err := parseDownload([]byte(out)); err == nil {
			t.Errorf("parseDownload(%s) gave no error", out)
		}
	}
}

func TestRun(t *testing.T) {
	osv := writeSet(t, osvSet)
	out := filepath.Join(t.TempDir(), "db")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-osv", osv, "-out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if want := osv + ": 3 OSV entries, 3 modules, modified 2099-03-01T00:00:00Z -> " + out + "\n"; stdout.String() != want {
		t.Errorf("run printed %q, want %q", stdout.String(), want)
	}
	err := run(context.Background(), []string{"-osv", osv}, io.Discard, io.Discard)
	if status := cli.Exit(io.Discard, "vulndb", err); status != cli.ExitUsage {
		t.Errorf("run without -out: %v, exit status %d, want %d", err, status, cli.ExitUsage)
	}
}

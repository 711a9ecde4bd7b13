package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/cli"
)

const (
	// dbModule is the module whose data/osv holds the database's OSV entries.
	dbModule = "golang.org/x/vulndb"
	osvDir   = "data/osv"
	// SourceFile, written last into the database directory, names where its entries came from;
	// hack/install-tools.sh reads it to tell a finished database from a partial one.
	SourceFile = "SOURCE.txt"
)

// Config says which OSV entries to index and where the database goes.
type Config struct {
	// Version is the golang.org/x/vulndb module version whose data/osv is indexed. The module
	// is found (and downloaded when missing) with `go mod download`. Set Version or OSVDir.
	Version string
	// OSVDir is a directory of OSV entries (<ID>.json) to index instead of the module's.
	OSVDir string
	// Out is the database directory to create. It must not exist, or be empty.
	Out string
	// Go is the go command that finds the module (default "go").
	Go string
}

// Validate reports every problem with c, joined.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Version == "" && c.OSVDir == "":
		errs = append(errs, errors.New("set -version (a golang.org/x/vulndb version) or -osv (a directory of OSV entries)"))
	case c.Version != "" && c.OSVDir != "":
		errs = append(errs, errors.New("-version and -osv both set: choose one source"))
	case c.Version != "":
		if _, ok := parseSemver(strings.TrimPrefix(c.Version, "v")); !ok || !strings.HasPrefix(c.Version, "v") {
			errs = append(errs, fmt.Errorf("-version %q: want an exact module version such as v0.0.0-20261105234957-e22db6528018", c.Version))
		}
	}
	if c.Out == "" {
		errs = append(errs, errors.New("-out is empty: name the database directory to create"))
	}
	return errors.Join(errs...)
}

// run parses the command line, finds the OSV entries and writes the database.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vulndb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := Config{Go: "go"}
	fs.StringVar(&cfg.Version, "version", "", "golang.org/x/vulndb module `version` whose data/osv to index")
	fs.StringVar(&cfg.OSVDir, "osv", "", "index this `directory` of OSV entries instead of the module's")
	fs.StringVar(&cfg.Out, "out", "", "database `directory` to create (must not exist, or be empty)")
	if err := fs.Parse(args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if err := cfg.Validate(); err != nil {
		return cli.Usage(err)
	}

	src := Source{Dir: cfg.OSVDir, Name: cfg.OSVDir}
	if cfg.Version != "" {
		mod, err := download(ctx, cfg.Go, dbModule, cfg.Version)
		if err != nil {
			return err
		}
		src = Source{Dir: filepath.Join(mod.Dir, filepath.FromSlash(osvDir)), Name: dbModule + "@" + cfg.Version + " " + osvDir, Time: mod.Time}
	}
	sum, err := Build(ctx, src, cfg.Out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s -> %s\n", sum, cfg.Out)
	return err
}

// module is a module version in the module cache.
type module struct {
	Dir  string    // its directory
	Time time.Time // its commit time
}

// download returns module@version in the module cache, downloading it when missing (through
// GOPROXY, checked against the checksum database as any download is).
func download(ctx context.Context, goCmd, path, version string) (module, error) {
	tmp, err := os.MkdirTemp("", "vulndb-download-")
	if err != nil {
		return module{}, fmt.Errorf("finding %s@%s: %w", path, version, err)
	}
	defer os.RemoveAll(tmp)
	// Outside any module, so that the download neither reads nor edits a go.mod.
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", path+"@"+version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	m, err := parseDownload(out)
	if err == nil && runErr != nil {
		err = runErr
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return module{}, fmt.Errorf("go mod download %s@%s: %w", path, version, err)
	}
	return m, nil
}

// parseDownload reads what `go mod download -json` printed for one module: its directory, and
// its commit time from the .info file it names.
func parseDownload(out []byte) (module, error) {
	var d struct {
		Dir, Info, Error string
	}
	if err := json.Unmarshal(out, &d); err != nil {
		return module{}, fmt.Errorf("reading its output: %w", err)
	}
	if d.Error != "" {
		return module{}, errors.New(d.Error)
	}
	if d.Dir == "" || d.Info == "" {
		return module{}, fmt.Errorf("it printed no module directory or .info file: %s", out)
	}
	b, err := os.ReadFile(d.Info)
	if err != nil {
		return module{}, fmt.Errorf("reading the module's commit time: %w", err)
	}
	var info struct{ Time time.Time }
	if err := json.Unmarshal(b, &info); err != nil {
		return module{}, fmt.Errorf("reading the module's commit time from %s: %w", d.Info, err)
	}
	return module{Dir: d.Dir, Time: info.Time}, nil
}

// Source is a directory of OSV entries.
type Source struct {
	Dir  string // holds <ID>.json files
	Name string // names it in SOURCE.txt
	// Time is the database's modified time when no entry has one: the OSV entries in the
	// golang.org/x/vulndb module all say 0001-01-01 (the served database sets each from the
	// repository's history), so the module version's commit time stands for the database's.
	Time time.Time
}

// Summary describes a database that Build wrote.
type Summary struct {
	Source   string    // where the entries came from
	Entries  int       // OSV entries
	Modules  int       // modules with at least one entry
	Modified time.Time // the latest modified time of an entry: the database's
}

// String returns the line that run prints and SOURCE.txt holds.
func (s Summary) String() string {
	return fmt.Sprintf("%s: %d OSV entries, %d modules, modified %s", s.Source, s.Entries, s.Modules, s.Modified.UTC().Format(time.RFC3339))
}

// The database's files (https://go.dev/security/vuln/database#api). govulncheck v1.9.0 reads
// index/db.json, index/modules.json and ID/<ID>.json from a file:// database; index/vulns.json
// completes the layout. The served database's .json.gz copies are left out: a file:// client
// does not read them.
type (
	dbMeta struct {
		Modified time.Time `json:"modified"`
	}
	moduleMeta struct {
		Path  string       `json:"path"`
		Vulns []moduleVuln `json:"vulns"`
	}
	moduleVuln struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
		// Fixed is the version from which no version is affected (empty when there is none);
		// govulncheck reads an entry only for a version below it.
		Fixed string `json:"fixed,omitempty"`
	}
	vulnMeta struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
		Aliases  []string  `json:"aliases,omitempty"`
	}
)

// entry is the part of an OSV entry that the indexes need.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []osvRange `json:"ranges"`
	} `json:"affected"`
}

type osvRange struct {
	Type   string  `json:"type"`
	Events []event `json:"events"`
}

type event struct {
	Introduced string `json:"introduced,omitempty"`
	Fixed      string `json:"fixed,omitempty"`
}

// Build indexes the OSV entries of src into a new database directory out, which must not exist
// or be empty. It writes into a temporary directory beside out and renames it into place, so out
// is either complete (with SOURCE.txt, naming src) or absent.
func Build(ctx context.Context, src Source, out string) (Summary, error) {
	sum := Summary{Source: src.Name}
	if names, err := os.ReadDir(out); err == nil && len(names) > 0 {
		return sum, fmt.Errorf("database directory %s exists and is not empty", out)
	}
	files, err := os.ReadDir(src.Dir)
	if err != nil {
		return sum, fmt.Errorf("reading the OSV entries: %w", err)
	}
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return sum, fmt.Errorf("creating the database directory: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return sum, fmt.Errorf("creating the database directory: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	for _, d := range []string{"index", "ID"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			return sum, fmt.Errorf("creating the database directory: %w", err)
		}
	}

	modules := map[string]*moduleMeta{}
	var vulns []vulnMeta
	for _, f := range files {
		if f.IsDir() || filepath.Ext(f.Name()) != ".json" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		e, err := addEntry(filepath.Join(src.Dir, f.Name()), filepath.Join(tmp, "ID"))
		if err != nil {
			return sum, err
		}
		vulns = append(vulns, vulnMeta{ID: e.ID, Modified: e.Modified, Aliases: e.Aliases})
		if e.Modified.After(sum.Modified) {
			sum.Modified = e.Modified
		}
		for _, a := range e.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &moduleMeta{Path: a.Package.Name}
				modules[m.Path] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified, Fixed: latestFixed(a.Ranges)})
		}
	}
	if len(vulns) == 0 {
		return sum, fmt.Errorf("no OSV entries (<ID>.json) in %s", src.Dir)
	}
	if sum.Modified.IsZero() {
		sum.Modified = src.Time
	}
	sum.Entries, sum.Modules = len(vulns), len(modules)

	byID := func(a, b string) int { return strings.Compare(a, b) }
	slices.SortFunc(vulns, func(a, b vulnMeta) int { return byID(a.ID, b.ID) })
	index := make([]*moduleMeta, 0, len(modules))
	for _, m := range modules {
		slices.SortStableFunc(m.Vulns, func(a, b moduleVuln) int { return byID(a.ID, b.ID) })
		index = append(index, m)
	}
	slices.SortFunc(index, func(a, b *moduleMeta) int { return strings.Compare(a.Path, b.Path) })
	for name, v := range map[string]any{"index/db.json": dbMeta{Modified: sum.Modified}, "index/modules.json": index, "index/vulns.json": vulns} {
		if err := writeJSON(filepath.Join(tmp, filepath.FromSlash(name)), v); err != nil {
			return sum, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, SourceFile), []byte(sum.String()+"\n"), 0o644); err != nil {
		return sum, fmt.Errorf("writing %s: %w", SourceFile, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return sum, fmt.Errorf("creating the database directory: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil { // replaces an empty out
		return sum, fmt.Errorf("moving the database into place: %w", err)
	}
	return sum, nil
}

// addEntry reads the OSV entry at path, checks it, and writes it (compacted) into idDir.
func addEntry(path, idDir string) (entry, error) {
	var e entry
	raw, err := os.ReadFile(path)
	if err != nil {
		return e, fmt.Errorf("reading OSV entry: %w", err)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, fmt.Errorf("OSV entry %s: %w", path, err)
	}
	if filepath.Base(path) != e.ID+".json" {
		return e, fmt.Errorf("OSV entry %s: its id is %q; want files named <ID>.json", path, e.ID)
	}
	for _, a := range e.Affected {
		if a.Package.Name == "" {
			return e, fmt.Errorf("OSV entry %s: an affected package has no name", path)
		}
		for _, r := range a.Ranges {
			for _, ev := range r.Events {
				for _, v := range []string{ev.Introduced, ev.Fixed} {
					if _, ok := parseSemver(v); r.Type == "SEMVER" && v != "" && v != "0" && !ok {
						return e, fmt.Errorf("OSV entry %s: %s: version %q is not semantic", path, a.Package.Name, v)
					}
				}
			}
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return e, fmt.Errorf("OSV entry %s: %w", path, err)
	}
	if err := os.WriteFile(filepath.Join(idDir, e.ID+".json"), compact.Bytes(), 0o644); err != nil {
		return e, fmt.Errorf("writing OSV entry %s: %w", e.ID, err)
	}
	return e, nil
}

// latestFixed returns the version of ranges from which no version is affected, or "" when a
// range is open: the latest fixed version, unless the vulnerability is introduced again after
// it. It follows golang.org/x/vulndb's generator (internal/osvutils.LatestFixed) and
// govulncheck's reading of the index (internal/semver.NonSupersededFix), including their
// order of evaluation across several ranges.
func latestFixed(ranges []osvRange) string {
	var latest string
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, ev := range r.Events {
			if ev.Fixed != "" && versionLess(latest, ev.Fixed) {
				latest = ev.Fixed
			}
		}
		for _, ev := range r.Events {
			if ev.Introduced != "" && ev.Introduced != "0" && versionLess(latest, ev.Introduced) {
				latest = ""
				break
			}
		}
	}
	return latest
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the index: %w", err)
	}
	return nil
}

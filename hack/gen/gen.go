package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/poolparity/poolparity/deploy/render"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/cli"
)

// tools are the binaries generation runs, from the bin directory.
var tools = []string{"controller-gen", "helm", "kustomize"}

// checkedPaths are where generated files live, relative to the repository root: -check fails on
// any change or untracked file under them.
var checkedPaths = []string{"deploy", "app/api", "dashboards", contractsPath}

// Config is what one gen invocation does.
type Config struct {
	Root  string // repository root
	Bin   string // directory of the pinned tools
	Check bool   // check the work tree instead of generating
}

func parseConfig(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	fs.StringVar(&c.Root, "root", ".", "repository root")
	fs.StringVar(&c.Bin, "bin", "", "directory of the pinned tools (default: <root>/bin)")
	fs.BoolVar(&c.Check, "check", false, "write nothing; fail when git reports a change or an untracked file under "+strings.Join(checkedPaths, ", "))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.Validate()
}

// Validate checks that Root is the repository root.
func (c Config) Validate() error {
	for _, p := range []string{"go.mod", render.ChartPath} {
		if _, err := os.Stat(filepath.Join(c.Root, p)); err != nil {
			return fmt.Errorf("-root %s is not the repository root: %w", c.Root, err)
		}
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseConfig(args, stderr)
	if err != nil {
		return cli.Usage(err)
	}
	cat := catalog.Default()
	if c.Check {
		stale, err := staleCatalogFiles(c.Root, cat)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("stale against internal/catalog: %s: run make generate and commit", strings.Join(stale, ", "))
		}
		if stale, err := staleReadme(c.Root, cat); err != nil {
			return err
		} else if stale {
			return fmt.Errorf("stale against the chart's README.md.gotmpl, Chart.yaml and values.yaml: %s: run make generate and commit", readmePath)
		}
		return checkClean(ctx, c.Root)
	}
	bin, shown := c.Bin, c.Bin
	if bin == "" {
		bin, shown = filepath.Join(c.Root, "bin"), "bin"
	}
	if err := findTools(bin, shown); err != nil {
		return err
	}
	files, err := catalogFiles(c.Root, cat)
	if err != nil {
		return fmt.Errorf("generating from the parity catalog: %w", err)
	}
	if err := writeFiles(c.Root, files); err != nil {
		return err
	}
	readme, err := readmeFrom(c.Root, files)
	if err != nil {
		return err
	}
	if err := writeFiles(c.Root, []render.File{readme}); err != nil {
		return err
	}
	steps := []struct {
		what string
		cmd  *exec.Cmd
	}{
		{"rules files", exec.CommandContext(ctx, "go", "run", "./hack/genrules")},
		{"controller code, CRD and RBAC", exec.CommandContext(ctx, filepath.Join("hack", "gen-controller.sh"))},
	}
	for _, s := range steps {
		s.cmd.Dir, s.cmd.Stdout, s.cmd.Stderr = c.Root, stdout, stderr
		s.cmd.Env = append(os.Environ(), "CONTROLLER_GEN="+filepath.Join(bin, "controller-gen"))
		if err := s.cmd.Run(); err != nil {
			return fmt.Errorf("generating the %s (%s): %w", s.what, strings.Join(s.cmd.Args, " "), err)
		}
	}
	root, err := filepath.Abs(c.Root)
	if err != nil {
		return err
	}
	done, err := render.Generate(ctx, root, render.Tools{Helm: filepath.Join(bin, "helm"), Kustomize: filepath.Join(bin, "kustomize")})
	if err != nil {
		return fmt.Errorf("rendering the deployment files: %w", err)
	}
	fmt.Fprintf(stdout, "gen: wrote %d files from the parity catalog, the chart's README, the rules files, the controller's files and %d rendered files\n", len(files), len(done))
	return nil
}

// writeFiles writes files under root.
func writeFiles(root string, files []render.File) error {
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f.Path), f.Data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
	}
	return nil
}

// findTools returns an error of one line naming the first tool missing from bin (shown as shown).
func findTools(bin, shown string) error {
	for _, t := range tools {
		fi, err := os.Stat(filepath.Join(bin, t)) // follows the link into the tool cache
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s not found: run make tools", filepath.Join(shown, t))
		}
	}
	return nil
}

// checkClean fails when git reports a modified, deleted or untracked file under checkedPaths.
func checkClean(ctx context.Context, root string) error {
	args := append([]string{"-C", root, "status", "--porcelain", "--untracked-files=all", "--"}, checkedPaths...)
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git status: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if len(bytes.TrimSpace(out)) > 0 {
		return errors.New("generated files are stale or not committed: run 'make generate' and commit:\n" + strings.TrimRight(string(out), "\n"))
	}
	return nil
}

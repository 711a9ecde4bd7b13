// Command runcwrap is an environment workaround, not part of poolparity: it stands in for runc on
// machines whose capability bounding set lacks CAP_SYS_RESOURCE (some sandboxes, such as the
// project's CI machines), where runc fails to start a privileged container ("unable to apply caps:
// operation not permitted") or one with a negative oom_score_adj ("can't get final child's PID
// from pipe").
//
// Before it execs the real runc with the same arguments, it rewrites the OCI runtime spec that
// runc is about to apply: CAP_SYS_RESOURCE is removed from every capability set, and a negative
// oomScoreAdj is raised to 0. It touches the bundle's config.json for `create` and `run`, and the
// --process file for `exec`. Every other call passes through unchanged.
//
// hack/kindrun registers it as dockerd's default runtime only when it detects the missing
// capability at run time (see docs/kind.md); a normal machine never uses it.
//
// The real runc is RUNCWRAP_RUNC, or runc on PATH (skipping this binary itself).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/poolparity/poolparity/internal/cli"
)

const dropCap = "CAP_SYS_RESOURCE"

func main() {
	os.Exit(cli.Exit(os.Stderr, "runcwrap", run(os.Args))) // run only returns when it cannot exec runc
}

func run(args []string) error {
	real, err := realRunc()
	if err != nil {
		return err
	}
	if err := rewrite(args[1:]); err != nil {
		return err
	}
	return syscall.Exec(real, append([]string{real}, args[1:]...), os.Environ())
}

// realRunc finds the runc this wrapper stands in for.
func realRunc() (string, error) {
	if p := os.Getenv("RUNCWRAP_RUNC"); p != "" {
		return p, nil
	}
	self, _ := os.Executable()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "runc")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			if rp, _ := filepath.EvalSymlinks(p); rp != "" && rp == self {
				continue
			}
			return p, nil
		}
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no real runc found (set RUNCWRAP_RUNC)")
}

// rewrite edits the spec files that args name, for the subcommands that apply one.
func rewrite(args []string) error {
	sub, rest := subcommand(args)
	switch sub {
	case "create", "run":
		bundle := flagValue(rest, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return fixFile(filepath.Join(bundle, "config.json"), true)
	case "exec":
		if p := flagValue(rest, "--process", "-p"); p != "" {
			return fixFile(p, false)
		}
	}
	return nil
}

// globalWithValue lists runc's global flags that take a separate value.
var globalWithValue = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// subcommand returns runc's subcommand and the arguments after it.
func subcommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
		if globalWithValue[a] {
			i++
		}
	}
	return "", nil
}

// flagValue returns the value of the first of names in args (as "--x v" or "--x=v").
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// fixFile rewrites a runtime spec (full is true) or a process spec in place, keeping every field
// it does not edit.
func fixFile(path string, full bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	changed := false
	if full {
		raw, ok := doc["process"]
		if ok {
			var proc map[string]json.RawMessage
			if err := json.Unmarshal(raw, &proc); err != nil {
				return fmt.Errorf("parsing %s process: %w", path, err)
			}
			if fixProcess(proc) {
				nb, err := json.Marshal(proc)
				if err != nil {
					return err
				}
				doc["process"], changed = nb, true
			}
		}
	} else {
		changed = fixProcess(doc)
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// fixProcess drops CAP_SYS_RESOURCE from proc's capability sets and raises a negative
// oomScoreAdj to 0. It reports whether it changed anything.
func fixProcess(proc map[string]json.RawMessage) bool {
	changed := false
	if raw, ok := proc["capabilities"]; ok {
		var caps map[string][]string
		if json.Unmarshal(raw, &caps) == nil {
			for set, list := range caps {
				kept := list[:0:0]
				for _, c := range list {
					if c != dropCap {
						kept = append(kept, c)
					}
				}
				if len(kept) != len(list) {
					caps[set], changed = kept, true
				}
			}
			if changed {
				proc["capabilities"], _ = json.Marshal(caps)
			}
		}
	}
	if raw, ok := proc["oomScoreAdj"]; ok {
		var v int
		if json.Unmarshal(raw, &v) == nil && v < 0 {
			proc["oomScoreAdj"], changed = json.RawMessage("0"), true
		}
	}
	return changed
}

package seqcount

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoConcurrency holds what lets `make test-go` run this package without
// the race detector (the Makefile's NORACE_PKGS): its code, tests included,
// starts no goroutine and imports neither sync nor sync/atomic, so the
// detector has nothing to find here and only multiplies the simulations'
// time. Concurrency added to this package must move it back under -race.
func TestNoConcurrency(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found in the package directory")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" || strings.HasPrefix(p, "sync/") {
				t.Errorf("%s imports %s: this package runs without -race (Makefile NORACE_PKGS); remove it from there first", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s starts a goroutine: this package runs without -race (Makefile NORACE_PKGS); remove it from there first", fset.Position(g.Pos()))
			}
			return true
		})
	}
}

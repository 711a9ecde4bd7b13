package demo_test

import (
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/demo"
	"github.com/poolparity/poolparity/internal/docblocks"
)

// TestDocumentedLocalCommand holds docs/demo.md's `poolparity-parity local`
// command line (the block run by demo-local, which TestE2EDemoLocalCommand
// runs) to the demo's own loop for SERVICE=example: the command the demo
// prints, from the configuration it gives the local mode.
func TestDocumentedLocalCommand(t *testing.T) {
	blocks, err := docblocks.ReadFile("../../docs/demo.md")
	if err != nil {
		t.Fatal(err)
	}
	got := docblocks.Of(blocks, "demo-local")
	if len(got) != 1 {
		t.Fatalf("docs/demo.md has %d demo-local blocks, want 1", len(got))
	}
	c := demo.Default()
	c.Service, c.ServiceBin, c.Root = demo.ServiceExample, demo.ExampleServiceBin, ""
	want := "bin/" + demo.CommandLine(demo.LocalConfig(c, c.ServiceBin, "", [2]int{}))
	if doc := strings.Join(strings.Fields(strings.ReplaceAll(got[0].Script, "\\\n", " ")), " "); doc != want {
		t.Errorf("docs/demo.md's command\n%s\nis not the demo's\n%s", doc, want)
	}
}

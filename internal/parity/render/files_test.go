package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/render"
)

func TestWriteFiles(t *testing.T) {
	r := parity.Report{Title: "t", Verdict: parity.Pass}
	t.Run("it writes the text, JSON and HTML reports", func(t *testing.T) {
		dir := t.TempDir()
		files, err := render.Files(r, dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"report.txt", "report.json", "report.html"} {
			if i >= len(files) || files[i] != filepath.Join(dir, name) {
				t.Fatalf("files %v, want %s at %d", files, name, i)
			}
			if st, err := os.Stat(files[i]); err != nil || st.Size() == 0 {
				t.Errorf("%s empty or missing: %v", name, err)
			}
		}
	})
	t.Run("a missing directory is an error naming the file", func(t *testing.T) {
		_, err := render.Files(r, filepath.Join(t.TempDir(), "absent"))
		if err == nil || !strings.Contains(err.Error(), "report.txt") {
			t.Errorf("error %v, want one naming report.txt", err)
		}
	})
}

package render

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/poolparity/poolparity/internal/parity"
)

// Files writes the report to dir as report.txt, report.json and
// report.html, the files that the demo, poolparity-parity and the kind
// harness leave behind, and returns the paths written. dir must exist.
// Each file is written even when another fails; the error names every
// one that failed.
func Files(r parity.Report, dir string) ([]string, error) {
	var files []string
	var errs []error
	for _, f := range []struct {
		name  string
		write func(io.Writer, parity.Report) error
	}{
		{"report.txt", Text},
		{"report.json", JSON},
		{"report.html", HTML},
	} {
		path := filepath.Join(dir, f.name)
		fh, err := os.Create(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", path, err))
			continue
		}
		werr := f.write(fh, r)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", path, err))
			continue
		}
		files = append(files, path)
	}
	return files, errors.Join(errs...)
}

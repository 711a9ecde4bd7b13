package parity

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFiles writes the report to dir as report.txt, report.json and
// report.html, the files that the demo and poolparity-parity leave behind,
// and returns the paths written. dir must exist.
func (r Report) WriteFiles(dir string) ([]string, error) {
	var files []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"report.txt", r.WriteText},
		{"report.json", r.WriteJSON},
		{"report.html", r.WriteHTML},
	} {
		path := filepath.Join(dir, f.name)
		fh, err := os.Create(path)
		if err != nil {
			return files, fmt.Errorf("writing %s: %w", path, err)
		}
		werr := f.write(fh)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return files, fmt.Errorf("writing %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

package render

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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

// Write writes the report of a run to dir, creating dir if need be, as
// Files does, whatever the run's end: runErr is the error the run ended in,
// nil when it produced r whole. It returns the report written, the files
// written and the error the run exits with.
//
// A run that ended in an error still leaves the three files behind: r with
// verdict ERROR, runErr's message (on one line) as its one reason, and what
// r held when the error came (the rows judged before it, the alerts, the
// notes; a verdict it already had becomes a note), so that the files say
// the verdict the exit status (ERROR) goes with. A file that cannot be
// written makes the run an ERROR too: the files are written again as such,
// so that none that was written says another verdict. The error returned is
// nil, runErr, the write's error, or runErr and the write's error, always on
// one line (errors.Is sees both).
func Write(r parity.Report, dir string, runErr error) (parity.Report, []string, error) {
	if runErr != nil {
		r = failed(r, runErr)
	}
	files, err := filesIn(r, dir)
	switch {
	case err == nil:
		return r, files, runErr
	case runErr != nil:
		return r, files, oneLine{fmt.Errorf("%w; and the report could not be written whole: %w", runErr, err)}
	}
	werr := oneLine{err}
	r = failed(r, werr)
	files, _ = filesIn(r, dir) // what fails is in werr already
	return r, files, werr
}

// filesIn creates dir and writes the files to it (Files).
func filesIn(r parity.Report, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	return Files(r, dir)
}

// failed returns r as the report of a run that ended in err.
func failed(r parity.Report, err error) parity.Report {
	if r.Verdict != "" && r.Verdict != parity.Error {
		r.Notes = append(slices.Clip(r.Notes), fmt.Sprintf("before the error, the report said %s (%s)", r.Verdict, strings.Join(r.Reasons, "; ")))
	}
	r.Verdict, r.Reasons = parity.Error, []string{oneLine{err}.Error()}
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	return r
}

// oneLine is an error whose message is on one line: a joined error's
// lines are separated by "; ".
type oneLine struct{ err error }

func (e oneLine) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e oneLine) Unwrap() error { return e.err }

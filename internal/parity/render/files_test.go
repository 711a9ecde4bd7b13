package render_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
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

func TestDifferentialIsWritten(t *testing.T) {
	r := parity.Report{Title: "t", Verdict: parity.Pass, Reasons: []string{"all rows pass"}}
	r.AddDifferential(diffcheck.Report{
		Compared: 300, Skipped: 2, Mismatches: 9, Rate: 0.03, Low: 0.016, High: 0.056, MaxMismatchRate: 0.01, Outcome: diffcheck.Fail, OneStable: true,
		Paths: []diffcheck.PathReport{{Endpoint: "GET /api/v1/items/{n}", Pattern: "$.tags[*]", Kind: diffcheck.KindValue, Requests: 9,
			Request: "GET /api/v1/items/7, line 4", Example: diffcheck.Diff{Path: "$.tags[0]", Kind: diffcheck.KindValue, A: `"a"`, B: `"<b>"`}}},
		Notes: []string{"bodies compared as bytes, not as JSON, in 3 of 300 compared requests"},
	})
	dir := t.TempDir()
	if _, err := render.Files(r, dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"report.txt", []string{
			"differential check of responses (noise learned from one stable asked twice): FAIL: 9 of 300 requests mismatch, 3.00% [1.60%, 5.60%] (95% Wilson), threshold 1.00%; 2 skipped",
			`mismatch: GET /api/v1/items/{n} $.tags[*] (value) in 9 requests, e.g. GET /api/v1/items/7, line 4: stable "a", gray "<b>"`,
			"note: bodies compared as bytes", "VERDICT: FAIL (responses differ: mismatch rate 3.00%"}},
		{"report.json", []string{`"differential": {`, `"mismatches": 9`, `"outcome": "FAIL"`, `"pattern": "$.tags[*]"`}},
		{"report.html", []string{"<h2>Differential check of responses</h2>", "3.00% [1.60%, 5.60%]", "<code>&#34;&lt;b&gt;&#34;</code>", "one stable asked twice"}},
	} {
		b, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q:\n%s", tc.file, w, b)
			}
		}
	}
	t.Run("how the responses were taken is said", func(t *testing.T) {
		r := parity.Report{Title: "t", Verdict: parity.Pass}
		r.AddDifferential(diffcheck.Report{Compared: 400, High: 0.009, MaxMismatchRate: 0.01, Outcome: diffcheck.Pass, OneStable: true, Method: "under load, at concurrency 16"})
		var b strings.Builder
		if err := render.Text(&b, r); err != nil {
			t.Fatal(err)
		}
		if want := "differential check of responses under load, at concurrency 16 (noise learned from one stable asked twice): PASS"; !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
		var h strings.Builder
		if err := render.HTML(&h, r); err != nil {
			t.Fatal(err)
		}
		if want := "<h2>Differential check of responses under load, at concurrency 16</h2>"; !strings.Contains(h.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	})
	t.Run("a report without the check says nothing of it", func(t *testing.T) {
		var b strings.Builder
		if err := render.Text(&b, parity.Report{Title: "t", Verdict: parity.Pass}); err != nil || strings.Contains(b.String(), "differential") {
			t.Errorf("text %q (%v), want no differential section", b.String(), err)
		}
	})
}

// TestThresholdsGateSaysItsFalseFailRate: a report the thresholds alone decide prints their
// measured false-FAIL rate once, on the gate line above the verdict, in the text; the JSON
// and HTML carry it as a note.
func TestThresholdsGateSaysItsFalseFailRate(t *testing.T) {
	r := parity.Report{Title: "t", Verdict: parity.Pass, Gate: parity.GateThresholds, Notes: []string{parity.ThresholdsNote, "other"}}
	dir := t.TempDir()
	if _, err := render.Files(r, dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		want string
		n    int
	}{
		{"report.txt", "verdict gate: the thresholds alone (no error control: at parity they failed " + parity.ThresholdsFalseFail, 1},
		{"report.txt", parity.ThresholdsFalseFail, 1},
		{"report.txt", "note: other", 1},
		{"report.json", `"gate": "thresholds"`, 1},
		{"report.json", parity.ThresholdsFalseFail, 1},
		{"report.html", "at parity they failed", 1},
	} {
		b, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), tc.want); got != tc.n {
			t.Errorf("%s has %q %d times, want %d:\n%s", tc.file, tc.want, got, tc.n, b)
		}
	}
}

// TestWriteOnEveryEnd: Write leaves the three files behind whatever the run's end, and
// their verdict always goes with the error it returns.
func TestWriteOnEveryEnd(t *testing.T) {
	read := func(t *testing.T, dir string) parity.Report {
		t.Helper()
		for _, name := range []string{"report.txt", "report.html"} {
			if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
				t.Errorf("%s not written: %v", name, err)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r parity.Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("report.json is not whole: %v", err)
		}
		return r
	}
	pass := parity.Report{Title: "t", Verdict: parity.Pass, Reasons: []string{"all rows pass"},
		Rows: []parity.Row{{SLI: "latency p95", Verdict: parity.Pass}}}
	t.Run("a run that produced its report writes it as it is, creating the directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		r, files, err := render.Write(pass, dir, nil)
		if err != nil || len(files) != 3 || r.Verdict != parity.Pass {
			t.Fatalf("verdict %s, files %v, error %v; want PASS in 3 files", r.Verdict, files, err)
		}
		if got := read(t, dir); got.Verdict != parity.Pass || len(got.Notes) != 0 {
			t.Errorf("report.json says %s, notes %q", got.Verdict, got.Notes)
		}
	})
	t.Run("a run that ended in an error writes ERROR with the error on one line and the rows read", func(t *testing.T) {
		dir := t.TempDir()
		runErr := errors.Join(errors.New("the query failed"), errors.New("twice"))
		r, files, err := render.Write(pass, dir, runErr)
		if !errors.Is(err, runErr) || len(files) != 3 || r.Verdict != parity.Error {
			t.Fatalf("verdict %s, files %v, error %v; want ERROR in 3 files and the run's error", r.Verdict, files, err)
		}
		got := read(t, dir)
		if got.Verdict != parity.Error || strings.Join(got.Reasons, "|") != "the query failed; twice" || len(got.Rows) != 1 {
			t.Errorf("report.json says %s (%q) with %d rows, want ERROR (the error on one line) and the row read", got.Verdict, got.Reasons, len(got.Rows))
		}
		if len(got.Notes) != 1 || got.Notes[0] != "before the error, the report said PASS (all rows pass)" {
			t.Errorf("notes %q, want the verdict before the error", got.Notes)
		}
		if got.At.IsZero() {
			t.Error("report.json has no time")
		}
	})
	t.Run("a file that cannot be written makes the others say ERROR, naming it", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "report.html"), 0o755); err != nil {
			t.Fatal(err)
		}
		r, files, err := render.Write(pass, dir, nil)
		if err == nil || !strings.Contains(err.Error(), "report.html") || strings.Contains(err.Error(), "\n") || len(files) != 2 || r.Verdict != parity.Error {
			t.Fatalf("verdict %s, files %v, error %v; want ERROR in 2 files and one line naming report.html", r.Verdict, files, err)
		}
		b, rerr := os.ReadFile(filepath.Join(dir, "report.json"))
		if rerr != nil || !strings.Contains(string(b), `"verdict": "ERROR"`) || !strings.Contains(string(b), "report.html") {
			t.Errorf("report.json (%v) does not say ERROR naming report.html:\n%s", rerr, b)
		}
	})
	t.Run("an error with files that cannot be written returns both on one line", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		runErr := errors.New("Prometheus is down")
		_, files, err := render.Write(pass, filepath.Join(file, "out"), runErr)
		if !errors.Is(err, runErr) || len(files) != 0 || strings.Contains(err.Error(), "\n") ||
			!strings.HasPrefix(err.Error(), "Prometheus is down; and the report could not be written whole: creating ") {
			t.Errorf("files %v, error %q; want none and both errors on one line", files, err)
		}
	})
}

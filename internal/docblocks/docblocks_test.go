package docblocks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/docblocks"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		md      string
		want    []docblocks.Block
		wantErr string
	}{
		{"blocks with their runners; other fences are text", "# T\n<!-- run: test -->\n```sh\necho a\necho b\n```\n```yaml\n```sh\n```\n<!-- run: kind:judge -->\n```sh\nx\n```\n",
			[]docblocks.Block{{Runner: "test", Line: 3, Script: "echo a\necho b"}, {Runner: "kind:judge", Line: 11, Script: "x"}}, ""},
		{"a comment that is not a run comment", "<!-- note -->\ntext\n", nil, ""},
		{"a block without a runner", "text\n```sh\necho\n```\n", nil, "line 2: a ```sh block without"},
		{"a runner without a block", "<!-- run: test -->\ntext\n", nil, "line 2: the run comment of line 1 is not followed"},
		{"a runner before another fence", "<!-- run: test -->\n```bash\n```\n", nil, "followed by ```bash"},
		{"a runner at the end", "<!-- run: test -->", nil, "line 1: the run comment is not followed"},
		{"an open block", "<!-- run: test -->\n```sh\necho\n", nil, "never closed"},
		{"an open other fence", "```yaml\na: 1\n", nil, "never closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := docblocks.Parse(tt.md)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("block %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			if n := len(docblocks.Of(got, "test")); tt.want != nil && n != 1 {
				t.Errorf("Of(test) has %d blocks, want 1", n)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.md"), filepath.Join(dir, "bad.md")
	if err := os.WriteFile(good, []byte("<!-- run: test -->\n```sh\necho\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("```sh\necho\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, wantErr string
		want                int
	}{
		{"a file's blocks", good, "", 1},
		{"a block without a runner names the file", bad, "bad.md: line 1", 0},
		{"a missing file is an error", filepath.Join(dir, "none.md"), "none.md", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := docblocks.ReadFile(tt.path)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if len(got) != tt.want {
				t.Errorf("%d blocks, want %d", len(got), tt.want)
			}
		})
	}
}

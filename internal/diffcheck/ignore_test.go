package diffcheck_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/diffcheck"
)

func TestParseIgnore(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
		err  string // a substring of the error; "" for none
	}{
		{"a member path gets its root", []string{".id", "$.created_at", "name"}, []string{"$.id", "$.created_at", "$.name"}, ""},
		{"array indices become [*]", []string{".items[3].ts", "$.items[*].id"}, []string{"$.items[*].ts", "$.items[*].id"}, ""},
		{"a member that is no identifier is quoted as diffs write it", []string{".meta.created-at", `$["a b"]`}, []string{`$.meta["created-at"]`, `$["a b"]`}, ""},
		{"status and content-type are kept", []string{"status", " content-type "}, []string{"status", "content-type"}, ""},
		{"blank entries are left out", []string{"", "  "}, nil, ""},
		{"the whole body is refused", []string{"$"}, nil, "the whole body"},
		{"an empty member is refused", []string{".a..b"}, nil, "empty member"},
		{"an unclosed bracket is refused", []string{".a[1"}, nil, "without its ']'"},
		{"a bracket of nonsense is refused", []string{".a[x]"}, nil, "[x]"},
		{"every bad entry is named", []string{".a[x]", "$", ".ok"}, nil, `".a[x]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := diffcheck.ParseIgnore(tt.in)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("ParseIgnore(%q) = %v", tt.in, err)
			case tt.err != "" && (err == nil || !errors.Is(err, diffcheck.ErrOptions) || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("ParseIgnore(%q) = %v, want ErrOptions naming %q", tt.in, err, tt.err)
			case tt.err == "" && !slices.Equal(got, tt.want):
				t.Errorf("ParseIgnore(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	many := make([]string, diffcheck.MaxIgnore+1)
	for i := range many {
		many[i] = ".a"
	}
	if _, err := diffcheck.ParseIgnore(many); err == nil {
		t.Errorf("%d paths accepted, want at most %d", len(many), diffcheck.MaxIgnore)
	}
}

func TestCheckIgnoresThePathsItIsTold(t *testing.T) {
	stable := serve(t, &itemAPI{})
	renamed := serve(t, &itemAPI{rename: true})  // items 3, 13, 23, 33 differ at $.name
	stamped := serve(t, &itemAPI{stamped: true}) // every item has $.ts, $.request_id and an object in $.tags[1]
	tests := []struct {
		name     string
		gray     string
		ignore   []string
		mismatch int
		note     string
	}{
		{"a difference counts unless ignored", renamed, nil, 4, ""},
		{"an ignored member does not count", renamed, []string{".name"}, 0, "paths given as legitimately different ($.name) ignored, in 4 of 40"},
		{"a path under an ignored one does not count", stamped, []string{".ts", "request_id", ".tags"}, 0, "ignored, in 40 of 40"},
		{"an ignored path does not hide another", stamped, []string{".ts", ".request_id"}, 40, "ignored, in 40 of 40"},
		{"a prefix of a name is not its path", renamed, []string{".nam"}, 4, "in 0 of 40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := check(t, stable, "", tt.gray, items(40), diffcheck.Options{Ignore: tt.ignore})
			if r.Mismatches != tt.mismatch {
				t.Errorf("%d mismatches, want %d:\n%s", r.Mismatches, tt.mismatch, r)
			}
			if tt.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one saying %q", r.Notes, tt.note)
			}
		})
	}
}

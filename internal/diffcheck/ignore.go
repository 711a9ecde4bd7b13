package diffcheck

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseIgnore checks the paths of Options.Ignore and returns them
// normalised as Diff paths are written, their array indices as [*]
// (Pattern): ".id" and "id" are "$.id", ".items[3].ts" is "$.items[*].ts",
// ".meta.created-at" is `$.meta["created-at"]`; "status" and
// "content-type" stay as they are. An entry of spaces only is left out. An
// error, wrapping ErrOptions, names every entry that is no such path, and
// more than MaxIgnore entries.
func ParseIgnore(paths []string) ([]string, error) {
	var (
		out  []string
		errs []string
	)
	for _, raw := range paths {
		p := strings.TrimSpace(raw)
		if p == "" {
			continue
		}
		norm, err := normaliseIgnore(p)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q: %v", raw, err))
			continue
		}
		out = append(out, norm)
	}
	if len(out) > MaxIgnore {
		errs = append(errs, fmt.Sprintf("%d paths, more than %d", len(out), MaxIgnore))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: ignore: %s (want JSON paths such as .id, .items[*].ts or $.meta, or status or content-type)",
			ErrOptions, strings.Join(errs, "; "))
	}
	return out, nil
}

// normaliseIgnore returns one path of Options.Ignore as a Pattern.
func normaliseIgnore(p string) (string, error) {
	switch {
	case p == "status" || p == "content-type":
		return p, nil
	case p == "$":
		return "", fmt.Errorf("the whole body: compare none (no differential check) instead")
	case strings.HasPrefix(p, "$"):
		p = p[1:]
	case strings.HasPrefix(p, ".") || strings.HasPrefix(p, "["):
	default:
		p = "." + p // a member of the top-level object
	}
	var b strings.Builder
	b.WriteString("$")
	for p != "" {
		switch p[0] {
		case '.':
			end := strings.IndexAny(p[1:], ".[")
			if end < 0 {
				end = len(p) - 1
			}
			name := p[1 : 1+end]
			if name == "" {
				return "", fmt.Errorf("an empty member name")
			}
			b.WriteString(member(name))
			p = p[1+end:]
		case '[':
			end := closing(p)
			if end < 0 {
				return "", fmt.Errorf("a '[' without its ']'")
			}
			inner := p[1:end]
			switch {
			case inner == "*":
				b.WriteString("[*]")
			case inner != "" && strings.Trim(inner, "0123456789") == "":
				b.WriteString("[*]") // one index stands for all, as Learn's patterns do
			case strings.HasPrefix(inner, `"`):
				name, err := strconv.Unquote(inner)
				if err != nil {
					return "", fmt.Errorf("a quoted member %s that does not unquote", inner)
				}
				b.WriteString(member(name))
			default:
				return "", fmt.Errorf("[%s]: want [*], an index or a quoted member name", inner)
			}
			p = p[end+1:]
		default:
			return "", fmt.Errorf("%q where '.' or '[' should be", p[0])
		}
	}
	return b.String(), nil
}

// closing returns the index in p (which starts with '[') of the ']' that
// closes it, skipping a quoted string, or -1.
func closing(p string) int {
	if strings.HasPrefix(p, `["`) {
		for i := 2; i < len(p); i++ {
			switch p[i] {
			case '\\':
				i++
			case '"':
				if i+1 < len(p) && p[i+1] == ']' {
					return i + 1
				}
				return -1
			}
		}
		return -1
	}
	return strings.IndexByte(p, ']')
}

// ignoredPath reports whether d is at one of the normalised paths of
// ignore, or under one.
func ignoredPath(ignore []string, d Diff) bool {
	if len(ignore) == 0 {
		return false
	}
	p := Pattern(d.Path)
	for _, ig := range ignore {
		if p == ig || strings.HasPrefix(p, ig) && (p[len(ig)] == '.' || p[len(ig)] == '[') {
			return true
		}
	}
	return false
}

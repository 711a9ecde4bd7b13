// Package docblocks reads the shell blocks of a Markdown document that say
// who runs them, so that the commands a document gives are the commands a
// test or the kind run executes, verbatim.
//
// A runnable block is a fenced ```sh block preceded, on the line before its
// fence, by an HTML comment naming its runner:
//
//	<!-- run: test -->
//	```sh
//	go run ./hack/genrules -o - -set rules.http.metrics=semconv
//	```
//
// The runner is a word the document's readers agree on (docs/adopt.md uses
// test for `go test` and kind:install, kind:judge for the kind run's example
// step). A ```sh block without such a comment is an error: every command of
// such a document is run somewhere.
package docblocks

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Block is one runnable shell block.
type Block struct {
	// Runner is the comment's runner, e.g. "test" or "kind:install".
	Runner string
	// Line is the line of the opening fence, from 1.
	Line int
	// Script is the block's text, its lines joined with newlines.
	Script string
}

var runComment = regexp.MustCompile(`^<!--\s*run:\s*([a-z0-9:_-]+)\s*-->$`)

// Parse returns the ```sh blocks of markdown, in order. It reports an error
// for a ```sh block without a run comment, a run comment not followed by a
// ```sh fence, or a fence left open.
func Parse(markdown string) ([]Block, error) {
	var (
		out     []Block
		runner  string // the comment just read, waiting for its fence
		runLine int
		cur     *Block
		body    []string
		inOther bool // inside a fence that is not ```sh
		n       int
	)
	sc := bufio.NewScanner(strings.NewReader(markdown))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil:
			if trimmed == "```" {
				cur.Script = strings.Join(body, "\n")
				out = append(out, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, line)
		case inOther:
			if trimmed == "```" {
				inOther = false
			}
		case trimmed == "```sh":
			if runner == "" {
				return nil, fmt.Errorf("line %d: a ```sh block without a <!-- run: ... --> comment on the line before it", n)
			}
			cur = &Block{Runner: runner, Line: n}
			runner = ""
		case strings.HasPrefix(trimmed, "```"):
			if runner != "" {
				return nil, fmt.Errorf("line %d: the run comment of line %d is followed by %s, not ```sh", n, runLine, trimmed)
			}
			inOther = true
		default:
			if runner != "" {
				return nil, fmt.Errorf("line %d: the run comment of line %d is not followed by a ```sh fence", n, runLine)
			}
			if m := runComment.FindStringSubmatch(trimmed); m != nil {
				runner, runLine = m[1], n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case cur != nil:
		return nil, fmt.Errorf("line %d: the ```sh block is never closed", cur.Line)
	case inOther:
		return nil, fmt.Errorf("a fenced block is never closed")
	case runner != "":
		return nil, fmt.Errorf("line %d: the run comment is not followed by a ```sh fence", runLine)
	}
	return out, nil
}

// Of returns the blocks of runner, in order.
func Of(blocks []Block, runner string) []Block {
	var out []Block
	for _, b := range blocks {
		if b.Runner == runner {
			out = append(out, b)
		}
	}
	return out
}

// ReadFile reads the Markdown file at path and returns its blocks (Parse),
// an error naming the file when it cannot be read or parsed.
func ReadFile(path string) ([]Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blocks, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return blocks, nil
}

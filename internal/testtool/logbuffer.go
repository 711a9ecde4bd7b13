package testtool

import (
	"strings"
	"sync"
)

// LogBuffer collects the output of a log handler that several goroutines
// write through, for a test to read. It is safe for concurrent use.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Count returns how many JSON log lines (slog.JSONHandler) have exactly msg
// as their message.
func (b *LogBuffer) Count(msg string) int {
	return strings.Count(b.String(), `"msg":"`+msg+`"`)
}

package cli_test

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/cli"
)

func TestExit(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantOut    string
	}{
		{"no error exits 0 and prints nothing", nil, 0, ""},
		{"-h exits 0 and prints nothing more", flag.ErrHelp, 0, ""},
		{"a plain error exits 1 with one prefixed line", errors.New("boom"), 1, "cmd: boom\n"},
		{"a usage error exits 2", cli.Usage(errors.New("POOL_MODE: bad")), 2, "cmd: POOL_MODE: bad\n"},
		{"Usage leaves -h alone", cli.Usage(fmt.Errorf("parsing: %w", flag.ErrHelp)), 0, ""},
		{"a wrapped status is found", fmt.Errorf("reading: %w", cli.WithStatus(4, errors.New("down"))), 4, "cmd: reading: down\n"},
		{"a bare status prints nothing", cli.Status(3), 3, ""},
		{"every line of a joined error is prefixed", cli.Usage(errors.Join(errors.New("A is empty"), errors.New("B is negative"))), 2,
			"cmd: A is empty\ncmd: B is negative\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if got := cli.Exit(&out, "cmd", tt.err); got != tt.wantStatus {
				t.Errorf("Exit = %d, want %d", got, tt.wantStatus)
			}
			if out.String() != tt.wantOut {
				t.Errorf("printed %q, want %q", out.String(), tt.wantOut)
			}
		})
	}
}

func TestNilStaysNil(t *testing.T) {
	if cli.WithStatus(2, nil) != nil || cli.Usage(nil) != nil || cli.Status(0) != nil {
		t.Error("a nil error or status 0 became an error")
	}
}

func TestParseLevel(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want slog.Level
	}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}} {
		if got, err := cli.ParseLevel(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "loud", "INFO", "info+2"} {
		if _, err := cli.ParseLevel(bad); err == nil || !strings.Contains(err.Error(), "want debug, info, warn or error") {
			t.Errorf("ParseLevel(%q) = %v, want an error listing the levels", bad, err)
		}
	}
}

func TestNewLogger(t *testing.T) {
	var out strings.Builder
	log, err := cli.NewLogger(&out, "warn")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(out.String(), "hidden") || !strings.Contains(out.String(), `"msg":"shown"`) {
		t.Errorf("a warn logger wrote:\n%s", out.String())
	}
	if _, err := cli.NewLogger(&out, "loud"); err == nil || !strings.Contains(err.Error(), `LOG_LEVEL="loud"`) {
		t.Errorf("NewLogger(loud) = %v, want a LOG_LEVEL error", err)
	}
}

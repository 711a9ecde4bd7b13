package main

import (
	"context"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/parity"
)

func TestExitStatusBeforeTheDemoStarts(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr string
	}{
		{"-h prints the usage and exits 0", []string{"-h"}, parity.ExitPass, "-scenario"},
		{"an unknown flag is a bad configuration", []string{"-bogus"}, parity.ExitUsage, "poolparity-demo: flag provided but not defined"},
		{"-report-only points to poolparity-parity", []string{"-report-only"}, parity.ExitUsage, "poolparity-demo: invalid demo configuration: -report-only moved to poolparity-parity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
			if got := cli.Exit(&stderr, "poolparity-demo", err); got != tt.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", got, tt.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.wantStderr, stderr.String())
			}
		})
	}
}

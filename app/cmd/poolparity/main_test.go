package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/testtool"
)

func TestRunHelpListsEverySetting(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h = %v, want flag.ErrHelp", err)
	}
	for _, env := range []string{"HTTP_ADDR", "GRAY_STATUS", "POOL_MODE", "REDIS_ADDR", "SHUTDOWN_DELAY", "FAULT_ERROR_RATE", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if !strings.Contains(stderr.String(), env) {
			t.Errorf("usage does not mention %s", env)
		}
	}
}

func TestRunRejectsInvalidConfig(t *testing.T) {
	getenv := func(k string) string {
		if k == "POOL_MODE" {
			return "bogus"
		}
		return ""
	}
	err := run(context.Background(), nil, getenv, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "POOL_MODE") {
		t.Fatalf("run = %v, want a POOL_MODE error", err)
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve, see the cancelled context at once, shut down
	getenv := func(k string) string {
		return map[string]string{"HTTP_ADDR": "127.0.0.1:0", "SHUTDOWN_DELAY": "0s"}[k]
	}
	// go-redis may still be dialling in its own goroutine when run returns, and it logs through
	// the process-wide logger main installs: the buffer must take writes from it concurrently.
	var stdout testtool.LogBuffer
	if err := run(ctx, nil, getenv, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatalf("run = %v", err)
	}
	for _, want := range []string{`"level":"WARN"`, "embedded", `"msg":"serving"`, `"msg":"drained"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, stdout.String())
		}
	}
}

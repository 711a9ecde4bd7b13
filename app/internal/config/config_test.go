package config_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/app/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseReadsEnvAndFlagsWin(t *testing.T) {
	c, err := config.Parse("t", []string{"-pool-mode=pooled", "-shutdown-delay=1s"}, env(map[string]string{
		"POOL_MODE": "unpooled", "GRAY_STATUS": "true", "REDIS_ADDR": "127.0.0.1:1", "FAULT_ERROR_RATE": "0.25",
		"FAULT_LATENCY": "15ms", "REDIS_POOL_SIZE": "7",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.PoolMode != "pooled" || !c.GrayStatus || c.RedisAddr != "127.0.0.1:1" || c.FaultErrorRate != 0.25 ||
		c.FaultLatency != 15*time.Millisecond || c.RedisPoolSize != 7 || c.ShutdownDelay != time.Second ||
		c.ShutdownTimeout != 20*time.Second || c.HTTPAddr != ":8080" {
		t.Fatalf("got %+v", c)
	}
}

func TestParseRejectsBadSettings(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"an unknown pool mode is rejected", map[string]string{"POOL_MODE": "sometimes"}, nil, "POOL_MODE"},
		{"a non-boolean gray status is rejected", map[string]string{"GRAY_STATUS": "maybe"}, nil, "GRAY_STATUS"},
		{"an error rate above 1 is rejected", map[string]string{"FAULT_ERROR_RATE": "1.5"}, nil, "FAULT_ERROR_RATE"},
		{"a negative delay is rejected", nil, []string{"-shutdown-delay=-1s"}, "SHUTDOWN_DELAY"},
		{"a zero shutdown timeout is rejected", map[string]string{"SHUTDOWN_TIMEOUT": "0s"}, nil, "SHUTDOWN_TIMEOUT"},
		{"a bad duration is rejected", map[string]string{"REDIS_READ_TIMEOUT": "soon"}, nil, "REDIS_READ_TIMEOUT"},
		{"an unknown log level is rejected", map[string]string{"LOG_LEVEL": "loud"}, nil, "LOG_LEVEL"},
		{"stray arguments are rejected", nil, []string{"extra"}, "unexpected arguments"},
		{"a negative heavy in-flight bound is rejected", map[string]string{"HEAVY_MAX_IN_FLIGHT": "-1"}, nil, "HEAVY_MAX_IN_FLIGHT"},
		{"a negative read budget is rejected", nil, []string{"-heavy-max-read-bytes=-5"}, "HEAVY_MAX_READ_BYTES"},
		{"a non-numeric held budget is rejected", map[string]string{"HEAVY_MAX_HELD_BYTES": "32MiB"}, nil, "HEAVY_MAX_HELD_BYTES"},
		{"a negative queue wait is rejected", map[string]string{"HEAVY_QUEUE_WAIT": "-1s"}, nil, "HEAVY_QUEUE_WAIT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("t", tt.args, env(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %s", err, tt.want)
			}
		})
	}
}

package demo

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestStartRedisEmbeddedRunsOneSharedServerInTheDemoProcess checks that,
// without redis-server (auto) or when asked (embedded), the demo runs one
// server in its own process and hands its address to both tracks, instead of
// leaving REDIS_ADDR empty (which made each track run a server whose
// allocations counted in its heap), and that teardown stops it.
func TestStartRedisEmbeddedRunsOneSharedServerInTheDemoProcess(t *testing.T) {
	for _, tc := range []struct {
		name, mode string
	}{
		{"embedded is asked for", RedisEmbedded},
		{"auto finds no redis-server on PATH", RedisAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir()) // no redis-server
			r := &runner{cfg: Config{Redis: tc.mode}, stdout: io.Discard, stderr: io.Discard}
			desc, err := r.startRedis(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if r.redisArg == "" {
				t.Fatal("REDIS_ADDR for the tracks is empty: each would start its own server")
			}
			if !strings.Contains(desc, "demo process") || !strings.Contains(desc, "shared by both tracks") {
				t.Errorf("description %q does not say the server is in the demo process and shared", desc)
			}
			ping := redisPing(r.redisArg)
			if err := ping(context.Background()); err != nil {
				t.Fatalf("ping %s: %v", r.redisArg, err)
			}
			r.teardown()
			if err := ping(context.Background()); err == nil {
				t.Errorf("the embedded server at %s still answers after teardown", r.redisArg)
			}
		})
	}
}

// TestStartRedisServerNeedsRedisServer checks that REDIS=server without
// redis-server on PATH is a clear error, not a silent fallback.
func TestStartRedisServerNeedsRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := &runner{cfg: Config{Redis: RedisServer}, stdout: io.Discard, stderr: io.Discard}
	_, err := r.startRedis(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "REDIS=server") {
		t.Errorf("error %v, want one naming REDIS=server", err)
	}
}

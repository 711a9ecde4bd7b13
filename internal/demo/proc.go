package demo

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/localproc"
)

// redisPing returns a check that sends PING to a Redis server (redis-server
// or the embedded one).
func redisPing(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		// A RESP array, not an inline command: the embedded server
		// (miniredis) does not read inline commands.
		if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := conn.Read(buf)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(buf[:n]), "+PONG") {
			return fmt.Errorf("redis answered %q", buf[:n])
		}
		return nil
	}
}

// serviceEnvKeys are the variables the service reads; the demo sets them
// itself and never passes the caller's values through.
var serviceEnvKeys = []string{
	"HTTP_ADDR", "GRAY_STATUS", "POOL_MODE", "LOG_LEVEL", "REDIS_", "SHUTDOWN_", "FAULT_", "OTEL_", "PPROF_",
}

// childEnv returns the demo's environment without the service's variables,
// plus set (KEY=value entries).
func childEnv(set ...string) []string {
	return localproc.Environ(os.Environ(), serviceEnvKeys, set...)
}

package demo

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
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

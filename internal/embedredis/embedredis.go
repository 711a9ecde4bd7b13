// Package embedredis runs an in-process Redis-protocol server on a loopback
// port, so that the service works on a machine with nothing else installed.
// Clients still connect over real TCP, so the go-redis connection pool and
// its metrics behave as they do against a real server. Data lives only in
// memory and is lost when the process exits.
package embedredis

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// Server is a running embedded server.
type Server struct {
	m *miniredis.Miniredis
}

// Start starts a server on 127.0.0.1 with a free port chosen by the kernel.
func Start() (*Server, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("starting embedded redis: %w", err)
	}
	return &Server{m: m}, nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.m.Addr() }

// Close stops the server and drops its data.
func (s *Server) Close() { s.m.Close() }

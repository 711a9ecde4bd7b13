package localproc_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/localproc"
)

func TestEnviron(t *testing.T) {
	environ := []string{"PATH=/bin", "HTTP_ADDR=:1", "REDIS_ADDR=x", "REDISX=y", "HOME=/h"}
	tests := []struct {
		name string
		drop []string
		set  []string
		want []string
	}{
		{"nothing dropped keeps everything", nil, nil, environ},
		{"a name drops that variable only", []string{"HTTP_ADDR"}, nil, []string{"PATH=/bin", "REDIS_ADDR=x", "REDISX=y", "HOME=/h"}},
		{"a name ending in _ drops the prefix", []string{"REDIS_"}, []string{"PORT=9"}, []string{"PATH=/bin", "HTTP_ADDR=:1", "REDISX=y", "HOME=/h", "PORT=9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := localproc.Environ(environ, tt.drop, tt.set...); !slices.Equal(got, tt.want) {
				t.Errorf("Environ = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWaitUntilNamesAProcessThatExited(t *testing.T) {
	p, err := localproc.Start("quitter", "/bin/sh", []string{"-c", "echo bye; exit 3"}, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	err = localproc.WaitUntil(context.Background(), p, 10*time.Second, 20*time.Millisecond, "quitter instance",
		func(context.Context) error { return errors.New("not yet") })
	if !errors.Is(err, localproc.ErrExited) || !strings.Contains(err.Error(), "quitter instance") || !strings.Contains(err.Error(), "bye") {
		t.Fatalf("WaitUntil = %v, want ErrExited naming the instance with its log", err)
	}
	if p.WaitErr() == nil {
		t.Error("WaitErr is nil for exit status 3")
	}
}

func TestReservePort(t *testing.T) {
	port, err := localproc.ReservePort(0)
	if err != nil || port <= 0 {
		t.Fatalf("ReservePort(0) = %d, %v", port, err)
	}
	if again, err := localproc.ReservePort(port); err != nil || again != port {
		t.Errorf("ReservePort(%d) = %d, %v, want the same free port", port, again, err)
	}
}

func TestPortsNeverGiveAPortTwice(t *testing.T) {
	var ps localproc.Ports
	const n = 200
	got := make(chan int, n)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range n / 4 {
				port, err := ps.Reserve(0)
				if err != nil {
					t.Error(err)
					return
				}
				got <- port
			}
		})
	}
	wg.Wait()
	close(got)
	seen := map[int]bool{}
	for port := range got {
		if port <= 0 || seen[port] {
			t.Fatalf("Reserve(0) gave port %d twice or out of range", port)
		}
		seen[port] = true
	}
	if len(seen) != n {
		t.Fatalf("%d ports, want %d", len(seen), n)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	var given int
	for p := range seen {
		given = p
		break
	}
	// The busy port may be one the 200 picks gave (the kernel reuses closed ports), so it is
	// asked of a Ports that gave none.
	var fresh localproc.Ports
	for _, tc := range []struct {
		name  string
		ports *localproc.Ports
		port  int
		want  string
	}{
		{"given before", &ps, given, "already given"},
		{"in use", &fresh, busy, "not free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := tc.ports.Reserve(tc.port); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Reserve(%d) = %d, %v, want an error saying %q", tc.port, p, err, tc.want)
			}
		})
	}
}

func TestGroupStopsEveryProcessAndItsChildren(t *testing.T) {
	dir := t.TempDir()
	var g localproc.Group
	var procs []*localproc.Proc
	for _, name := range []string{"a", "b"} {
		// The shell starts a child of its own: stopping the group must end it too.
		p, err := localproc.Start(name, "/bin/sh", []string{"-c", "sleep 60 & wait"}, nil, dir)
		if err != nil {
			t.Fatal(err)
		}
		g.Add(p)
		procs = append(procs, p)
	}
	if n := g.Stop(2 * time.Second); n != 2 {
		t.Errorf("Stop = %d, want 2", n)
	}
	for _, p := range procs {
		if !p.Exited() {
			t.Errorf("%s still runs after Stop", p.Name())
		}
	}
	if n := g.Stop(time.Second); n != 0 {
		t.Errorf("a second Stop = %d, want 0", n)
	}
}

package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/service"
)

// serveOn starts s on a loopback listener and returns its base URL and a
// channel that receives Serve's result.
func serveOn(t *testing.T, ctx context.Context, s *service.Service) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), served
}

// TestShutdownUnderKeepAliveLoadLosesNoRequest stops one of two pods while
// clients send PUTs over keep-alive connections, through a dialer that
// plays the load balancer: it sends new connections to the stopping pod
// until that pod's /readyz turns false, and to the other pod after. No
// request may be written and then go unanswered: the stopping pod must make
// its clients move (Connection: close) during SHUTDOWN_DELAY, before
// http.Server.Shutdown closes connections it sees as idle.
func TestShutdownUnderKeepAliveLoadLosesNoRequest(t *testing.T) {
	mod := func(c *config.Config) {
		c.ShutdownDelay = 400 * time.Millisecond
		c.ShutdownTimeout = 5 * time.Second
	}
	stopping, other := newService(t, mod), newService(t, mod)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	baseA, servedA := serveOn(t, ctx, stopping)
	baseB, _ := serveOn(t, t.Context(), other)
	addrA, addrB := strings.TrimPrefix(baseA, "http://"), strings.TrimPrefix(baseB, "http://")

	var out atomic.Bool // the balancer has taken the stopping pod out
	var dialer net.Dialer
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			if out.Load() {
				return dialer.DialContext(ctx, network, addrB)
			}
			return dialer.DialContext(ctx, network, addrA)
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitReady(t, probe, baseA)
	waitReady(t, probe, baseB)

	// The balancer: polls the stopping pod's readiness.
	balancerDone := make(chan struct{})
	go func() {
		defer close(balancerDone)
		for !out.Load() {
			if resp, err := probe.Get(baseA + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					out.Store(true)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	const workers = 24
	var (
		wg       sync.WaitGroup
		sent     atomic.Int64
		lost     atomic.Int64
		firstErr atomic.Value
		halt     atomic.Bool
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !halt.Load(); i++ {
				req, _ := http.NewRequest("PUT", fmt.Sprintf("http://pod/api/v1/items/ka-%d-%d", w, i%50),
					strings.NewReader(`{"name":"keep-alive"}`))
				sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					var op *net.OpError
					if errors.As(err, &op) && op.Op == "dial" {
						continue // never written: the balancer's concern, not a lost request
					}
					lost.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					lost.Add(1)
					firstErr.CompareAndSwap(nil, "status "+resp.Status)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // every worker holds a keep-alive connection to the stopping pod
	stop()
	select {
	case err := <-servedA:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stopping pod's Serve did not return")
	}
	time.Sleep(100 * time.Millisecond) // load goes on against the other pod
	halt.Store(true)
	wg.Wait()
	<-balancerDone
	t.Logf("%d requests sent, %d written without a response", sent.Load(), lost.Load())
	if n := lost.Load(); n != 0 {
		t.Errorf("%d requests were lost at shutdown (first: %v), want 0", n, firstErr.Load())
	}
	if sent.Load() < workers*10 {
		t.Errorf("only %d requests sent: the load did not run", sent.Load())
	}
}

//go:build unix

package service_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/config"
	"github.com/poolparity/poolparity/internal/redistest"
	"github.com/poolparity/poolparity/internal/service"
	"github.com/poolparity/poolparity/internal/testtool"
)

// get sends one GET and returns the status, the body and how long it took.
func get(t *testing.T, c *http.Client, url string) (int, []byte, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return 0, []byte(err.Error()), time.Since(start)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body, time.Since(start)
}

// redisUp reads the redis_up gauge from /metrics: 1, 0, or -1 when absent.
func redisUp(t *testing.T, c *http.Client, base string) int {
	t.Helper()
	_, body, _ := get(t, c, base+"/metrics")
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "redis_up{") {
			if strings.HasSuffix(strings.TrimSpace(line), " 1") {
				return 1
			}
			return 0
		}
	}
	return -1
}

// TestRedisFreezeKeepsThePodReady is issue 26's loopback check: a real
// redis-server frozen with SIGSTOP for 12 seconds, with the service's
// default Redis timeouts. Throughout and after, /readyz answers 200 (a
// stall of the Redis every pod shares must not empty the Service), while an
// item GET answers a JSON 503 within 3 seconds, redis_up turns 0 and the
// logs stay at a bounded rate. After SIGCONT the service serves again
// without a restart; on SIGTERM (the context's cancellation) it leaves
// readiness.
func TestRedisFreezeKeepsThePodReady(t *testing.T) {
	const (
		freeze     = 12 * time.Second
		answerIn   = 3 * time.Second
		probeEvery = 250 * time.Millisecond
	)
	rs := redistest.Start(t) // its own: SIGSTOP must not stall other tests' Redis
	var logs testtool.LogBuffer
	cfg := config.Default()
	cfg.RedisAddr = rs.Addr()
	cfg.RedisHealthInterval = time.Second
	cfg.ShutdownDelay = 500 * time.Millisecond
	cfg.ShutdownTimeout = 5 * time.Second
	s, err := service.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, sigterm := context.WithCancel(context.Background())
	defer sigterm()
	base, served := serveOn(t, ctx, s)
	// A kubelet-like probe: a new connection each time, a 2s timeout.
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	client := &http.Client{Timeout: 10 * time.Second}
	waitReady(t, probe, base)
	put, _ := http.NewRequest("PUT", base+"/api/v1/items/frozen", strings.NewReader(`{"name":"before the freeze"}`))
	if resp, err := client.Do(put); err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT before the freeze: %v %v", resp, err)
	}
	// The watcher pings at start, then every second: on a busy machine its first ping may time
	// out, so give it a few checks to see Redis up before freezing it.
	for i := 0; redisUp(t, probe, base) != 1; i++ {
		if i == 20 {
			t.Fatalf("redis_up = %d 5 s after the service started, want 1", redisUp(t, probe, base))
		}
		time.Sleep(250 * time.Millisecond)
	}

	rs.Freeze()
	frozenAt := time.Now()
	thawed := false
	defer func() {
		if !thawed {
			rs.Thaw()
		}
	}()
	// The prober runs through the freeze and a little after it.
	var probes, notReady int
	var firstNotReady string
	proberDone := make(chan struct{})
	go func() {
		defer close(proberDone)
		for time.Since(frozenAt) < freeze+2*time.Second {
			code, body, _ := get(t, probe, base+"/readyz")
			probes++
			if code != 200 {
				notReady++
				if firstNotReady == "" {
					firstNotReady = string(body)
				}
			}
			time.Sleep(probeEvery)
		}
	}()

	// Item GETs early and late in the freeze: each a JSON 503, quickly.
	var slowest time.Duration
	for _, at := range []time.Duration{500 * time.Millisecond, freeze - 4*time.Second} {
		time.Sleep(time.Until(frozenAt.Add(at)))
		code, body, took := get(t, client, base+"/api/v1/items/frozen")
		slowest = max(slowest, took)
		var e struct {
			Error string `json:"error"`
		}
		if code != 503 || json.Unmarshal(body, &e) != nil || e.Error == "" {
			t.Errorf("item GET %s into the freeze = %d %s, want a JSON 503", at, code, body)
		}
		if took > answerIn {
			t.Errorf("item GET %s into the freeze answered in %s, want <= %s", at, took, answerIn)
		}
	}
	if up := redisUp(t, probe, base); up != 0 {
		t.Errorf("redis_up = %d during the freeze, want 0", up)
	}
	time.Sleep(time.Until(frozenAt.Add(freeze)))
	rs.Thaw()
	thawed = true

	// After SIGCONT: the item reads back, without a restart of the service.
	deadline := time.Now().Add(5 * time.Second)
	var recovered time.Duration
	for {
		code, body, _ := get(t, client, base+"/api/v1/items/frozen")
		if code == 200 && strings.Contains(string(body), "before the freeze") {
			recovered = time.Since(frozenAt) - freeze
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("item GET still %d %s 5s after the thaw", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	<-proberDone
	for deadline := time.Now().Add(3 * time.Second); redisUp(t, probe, base) != 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("redis_up not back to 1 3s after the thaw")
		}
	}
	t.Logf("frozen %s: %d probes, %d not ready; slowest item GET %s; serving again %s after the thaw",
		freeze, probes, notReady, slowest.Round(time.Millisecond), recovered.Round(time.Millisecond))
	if notReady != 0 || probes < int(freeze/probeEvery)/2 {
		t.Errorf("%d of %d readiness probes failed during the freeze (first: %s), want 0 of at least %d", notReady, probes, firstNotReady, int(freeze/probeEvery)/2)
	}
	// Bounded logs: the first failure, at most one line per 10s while down,
	// one on recovery; request failures at most one line per 10s.
	down, still, back, storage := logs.Count("redis unreachable: requests that need it answer 503; readiness is unaffected"),
		logs.Count("redis still unreachable"), logs.Count("redis reachable again"), logs.Count("storage unavailable")
	t.Logf("log lines: %d unreachable, %d still unreachable, %d reachable again, %d storage unavailable", down, still, back, storage)
	if down != 1 || still > 2 || back != 1 || storage > 2 {
		t.Errorf("log lines: %d unreachable (want 1), %d still unreachable (want <= 2), %d reachable again (want 1), %d storage unavailable (want <= 2)",
			down, still, back, storage)
	}

	// SIGTERM: the pod leaves readiness during the shutdown delay.
	sigterm()
	time.Sleep(100 * time.Millisecond)
	if code, body, _ := get(t, probe, base+"/readyz"); code != 503 {
		t.Errorf("/readyz after SIGTERM = %d %s, want 503", code, body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
}

package embedredis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/poolparity/poolparity/internal/embedredis"
)

// TestSharedByTwoClients runs two clients, as the demo's two tracks are,
// against one server at the same time: each sees the other's writes and
// none of the concurrent commands is lost (run with -race).
func TestSharedByTwoClients(t *testing.T) {
	srv, err := embedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	clients := []*redis.Client{
		redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 8}),
		redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 8}),
	}
	const workers, perWorker = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*workers)
	for ci, c := range clients {
		defer c.Close()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWorker {
					key := fmt.Sprintf("k:%d:%d:%d", ci, w, i)
					if err := c.Set(ctx, key, key, 0).Err(); err != nil {
						errs <- fmt.Errorf("set %s: %w", key, err)
						return
					}
					if err := c.Incr(ctx, "shared").Err(); err != nil {
						errs <- fmt.Errorf("incr: %w", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Each client reads what the other wrote.
	for ci, c := range clients {
		other := fmt.Sprintf("k:%d:3:7", 1-ci)
		if got, err := c.Get(ctx, other).Result(); err != nil || got != other {
			t.Errorf("client %d reading %s: %q, %v", ci, other, got, err)
		}
	}
	if n, err := clients[0].Get(ctx, "shared").Int(); err != nil || n != len(clients)*workers*perWorker {
		t.Errorf("shared counter = %d (%v), want %d: concurrent commands were lost", n, err, len(clients)*workers*perWorker)
	}
}

// TestCloseStopsServing checks that Close stops the server: the demo relies
// on it to leave nothing listening.
func TestCloseStopsServing(t *testing.T) {
	srv, err := embedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping before Close: %v", err)
	}
	srv.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Error("ping after Close succeeded, want an error")
	}
}

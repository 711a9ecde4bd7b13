package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/poolparity/poolparity/internal/redistest"
)

// redisOutputBytes is how many bytes the Redis server has sent to its
// clients so far (INFO stats total_net_output_bytes).
func redisOutputBytes(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_net_output_bytes")
	return 0
}

// TestListReadsSummariesNotPayloads stores items with large payloads and
// checks, by the bytes Redis sends, that listing them reads their names
// and tags only.
func TestListReadsSummariesNotPayloads(t *testing.T) {
	rs := redistest.Start(t) // a server of its own: its byte counters see only this test
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			st, rdb := testStore(t, rs.Addr())
			e := newServer(t, st, m.mode)
			const items, payload = 20, 256 << 10
			for i := range items {
				body := fmt.Sprintf(`{"name":"n%d","tags":["t"],"payload":%q}`, i, strings.Repeat("x", payload))
				if code, b := e.do(t, "PUT", fmt.Sprintf("/api/v1/items/big%02d", i), strings.NewReader(body)); code != 200 {
					t.Fatalf("PUT = %d %s", code, b)
				}
			}
			before := redisOutputBytes(t, rdb)
			code, body := e.do(t, "GET", "/api/v1/items?limit=500", nil)
			read := redisOutputBytes(t, rdb) - before
			if code != 200 || !strings.HasPrefix(string(body), fmt.Sprintf(`{"count":%d,`, items)) {
				t.Fatalf("list = %d %.200s", code, body)
			}
			// The answer is about 1 KB; SCAN replies and INFO add a little.
			if limit := int64(32 << 10); read > limit {
				t.Errorf("the list made Redis send %d bytes for %d items of %d KiB, want <= %d: it reads payloads", read, items, payload>>10, limit)
			}
			t.Logf("list of %d items of %d KiB: Redis sent %d bytes", items, payload>>10, read)
		})
	}
}

// TestListReadsItemsStoredWithoutSummary lists items written in the format
// that predates summaries (the item's JSON alone), beside new ones.
func TestListReadsItemsStoredWithoutSummary(t *testing.T) {
	st, rdb := testStore(t, redistest.Addr(t))
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			e := newServer(t, st, m.mode)
			if code, b := e.do(t, "PUT", "/api/v1/items/new", strings.NewReader(`{"name":"New","tags":["n"],"payload":"p"}`)); code != 200 {
				t.Fatalf("PUT = %d %s", code, b)
			}
			// The old format: only the item key, written as the service used to.
			key := strings.TrimSuffix(st.ItemKey("new"), "new") + "old"
			if err := rdb.Set(context.Background(), key, `{"name":"Old","tags":["o"],"payload":"q"}`, 0).Err(); err != nil {
				t.Fatal(err)
			}
			code, body := e.do(t, "GET", "/api/v1/items", nil)
			want := `{"count":2,"items":[{"id":"new","name":"New","tags":["n"]},{"id":"old","name":"Old","tags":["o"]}]}` + "\n"
			if code != 200 || string(body) != want {
				t.Fatalf("list = %d %s, want %s", code, body, want)
			}
			if code, _ := e.do(t, "DELETE", "/api/v1/items/old", nil); code != 204 {
				t.Errorf("DELETE of an old-format item = %d, want 204", code)
			}
			if code, _ := e.do(t, "DELETE", "/api/v1/items/new", nil); code != 204 {
				t.Errorf("DELETE = %d, want 204", code)
			}
			if n, err := rdb.Exists(context.Background(), st.ItemKey("new"), st.SummaryKey("new")).Result(); err != nil || n != 0 {
				t.Errorf("after DELETE, %d of the item's keys remain (%v)", n, err)
			}
		})
	}
}

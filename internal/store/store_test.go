package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/poolparity/poolparity/internal/redistest"
	"github.com/poolparity/poolparity/internal/store"
)

func newStore(t *testing.T) (*store.Store, *redis.Client) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	return store.New(rdb, store.WithKeyPrefix("test:"+hex.EncodeToString(b[:])+":item:")), rdb
}

type got struct {
	i     int
	value string
	found bool
}

// TestGetSummariesMixesFormatsInOrder reads, in one batch, items with a
// summary, items stored before summaries (only the item key) and ids with
// no item, with old-format items large enough to need several MGETs, and
// checks fn sees each id once, in order, with the right value.
func TestGetSummariesMixesFormatsInOrder(t *testing.T) {
	st, rdb := newStore(t)
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20)
	var ids, want []string
	for i := range 20 {
		id := fmt.Sprintf("id%02d", i)
		ids = append(ids, id)
		switch i % 3 {
		case 0: // the current format
			if err := st.Put(ctx, id, []byte(`{"name":"new","tags":[],"payload":"p"}`), []byte(fmt.Sprintf(`{"name":"s%d","tags":[]}`, i))); err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf(`{"name":"s%d","tags":[]}`, i))
		case 1: // the old format: 1 MiB items, more than one 4 MiB chunk in all
			v := fmt.Sprintf(`{"name":"o%d","tags":[],"payload":"%s"}`, i, big)
			if err := rdb.Set(ctx, st.ItemKey(id), v, 0).Err(); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		case 2: // deleted since the scan
			want = append(want, "")
		}
	}
	var seen []got
	if _, err := st.GetSummaries(ctx, ids, nil, func(i int, v string, found bool) error {
		seen = append(seen, got{i, v, found})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(ids) {
		t.Fatalf("fn called %d times for %d ids", len(seen), len(ids))
	}
	for i, g := range seen {
		if g.i != i || g.found != (want[i] != "") || g.value != want[i] {
			t.Errorf("call %d: i=%d found=%v value %.40q, want i=%d value %.40q", i, g.i, g.found, g.value, i, want[i])
		}
	}
}

func TestPutAndDeleteKeepItemAndSummaryTogether(t *testing.T) {
	st, rdb := newStore(t)
	ctx := context.Background()
	if err := st.Put(ctx, "a", []byte(`{"name":"a","tags":["t"],"payload":"p"}`), []byte(`{"name":"a","tags":["t"]}`)); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		st.ItemKey("a"):    `{"name":"a","tags":["t"],"payload":"p"}`,
		st.SummaryKey("a"): `{"name":"a","tags":["t"]}`,
	} {
		if v, err := rdb.Get(ctx, key).Result(); err != nil || v != want {
			t.Errorf("GET %s = %q, %v; want %q", key, v, err, want)
		}
	}
	if err := st.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, st.ItemKey("a"), st.SummaryKey("a")).Result(); err != nil || n != 0 {
		t.Errorf("%d keys left after Delete (%v)", n, err)
	}
	// An item stored in the old format (no summary) deletes too.
	if err := rdb.Set(ctx, st.ItemKey("old"), `{"name":"o"}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "old"); err != nil {
		t.Errorf("Delete of an old-format item = %v", err)
	}
}

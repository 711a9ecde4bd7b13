package termstats

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/pools"
)

// dupStore is a Store whose SCAN returns some ids more than once, as Redis
// SCAN may while the keyspace is rehashed.
type dupStore struct {
	scan  []string
	items map[string]string
}

func (d dupStore) ScanIDs(_ context.Context, dst []string, limit int) ([]string, error) {
	for _, id := range d.scan {
		if len(dst) == limit {
			break
		}
		dst = append(dst, id)
	}
	return dst, nil
}

func (d dupStore) GetMany(_ context.Context, ids []string, keys []string, fn func(int, string, bool) error) ([]string, error) {
	for i, id := range ids {
		v, ok := d.items[id]
		if err := fn(i, v, ok); err != nil {
			return keys, err
		}
	}
	return keys, nil
}

func TestBuildCountsAnItemOnceWhenScanRepeatsIt(t *testing.T) {
	st := dupStore{
		scan: []string{"b", "a", "b", "a", "c"},
		items: map[string]string{
			"a": `{"name":"a","tags":["x"],"payload":"one two"}`,
			"b": `{"name":"b","tags":["x"],"payload":"three"}`,
			"c": `{"name":"c","tags":[],"payload":"four"}`,
		},
	}
	// Every mode, the misuses included, gives the same report: a misuse
	// costs memory or CPU, or leaks state a later request sees, but a
	// single build on a fresh builder is still right.
	for _, mode := range pools.Modes {
		t.Run(string(mode), func(t *testing.T) {
			b, err := NewBuilder(st, pools.Settings{Mode: mode, Registry: instrument.NewRegistry(), CheckEvery: 1}, Budget{})
			if err != nil {
				t.Fatal(err)
			}
			var rep Report
			err = b.Build(context.Background(), 10, func(body []byte) error { return json.Unmarshal(body, &rep) })
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range rep.Entries {
				ids = append(ids, e.ID)
			}
			if rep.Items != 3 || len(ids) != 3 || ids[0] != "a" || ids[1] != "b" || ids[2] != "c" {
				t.Errorf("items %d, entries %v; want 3 entries a, b, c", rep.Items, ids)
			}
			if rep.Words != 4 {
				t.Errorf("words %d, want 4", rep.Words)
			}
			if len(rep.Tags) != 1 || rep.Tags[0].Count != 2 {
				t.Errorf("tags %+v, want x counted twice", rep.Tags)
			}
		})
	}
}

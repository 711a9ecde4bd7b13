package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/poolparity/poolparity/internal/server"
	"github.com/poolparity/poolparity/internal/store"
)

// repeatingScanStore is a server.Store whose SCAN returns some ids more
// than once, as Redis SCAN may while the keyspace is rehashed.
type repeatingScanStore struct {
	scan  []string
	items map[string]string
}

func (s repeatingScanStore) Ping(context.Context) error                        { return nil }
func (s repeatingScanStore) Put(context.Context, string, []byte, []byte) error { return nil }
func (s repeatingScanStore) Delete(context.Context, string) error              { return nil }
func (s repeatingScanStore) Get(_ context.Context, id string) (string, error) {
	if v, ok := s.items[id]; ok {
		return v, nil
	}
	return "", store.ErrNotFound
}

func (s repeatingScanStore) ScanIDs(_ context.Context, dst []string, limit int) ([]string, error) {
	for _, id := range s.scan {
		if len(dst) == limit {
			break
		}
		dst = append(dst, id)
	}
	return dst, nil
}

func (s repeatingScanStore) GetSummaries(ctx context.Context, ids []string, keys []string, fn func(int, string, bool) error) ([]string, error) {
	return s.GetMany(ctx, ids, keys, fn)
}

func (s repeatingScanStore) GetMany(_ context.Context, ids []string, keys []string, fn func(int, string, bool) error) ([]string, error) {
	for i, id := range ids {
		v, ok := s.items[id]
		if err := fn(i, v, ok); err != nil {
			return keys, err
		}
	}
	return keys, nil
}

func TestListShowsAnItemOnceWhenScanRepeatsIt(t *testing.T) {
	st := repeatingScanStore{
		scan: []string{"b", "a", "b", "a"},
		items: map[string]string{
			"a": `{"name":"a","tags":[],"payload":"p"}`,
			"b": `{"name":"b","tags":[],"payload":"p"}`,
		},
	}
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			s, err := server.New(server.Options{Store: st, Mode: m.mode})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/items?limit=10", nil))
			var got struct {
				Count int `json:"count"`
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
				t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
			}
			if got.Count != 2 || len(got.Items) != 2 || got.Items[0].ID != "a" || got.Items[1].ID != "b" {
				t.Errorf("got %+v, want a and b once each", got)
			}
		})
	}
}

// cancelledStore fails every call the way go-redis does when the request's
// context is done.
type cancelledStore struct{ repeatingScanStore }

func (cancelledStore) Get(ctx context.Context, _ string) (string, error) { return "", ctx.Err() }

func TestAClientThatLeftIsA499NotA5xx(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			s, err := server.New(server.Options{Store: cancelledStore{}, Mode: m.mode})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/items/a", nil).WithContext(ctx))
			if rec.Code != server.StatusClientClosedRequest {
				t.Errorf("status %d, want 499 for a request whose client left", rec.Code)
			}
		})
	}
}

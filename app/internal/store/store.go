// Package store keeps items in Redis through go-redis. It knows keys and
// commands, not HTTP: callers branch on ErrNotFound and treat every other
// error as the store being unavailable.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound is returned when an item does not exist.
var ErrNotFound = errors.New("item not found")

// DefaultKeyPrefix namespaces the service's keys.
const DefaultKeyPrefix = "item:"

// scanCount is the COUNT hint of each SCAN step.
const scanCount = 256

// mgetBatch bounds the number of keys per MGET.
const mgetBatch = 128

// Store reads and writes items as JSON values under "item:<id>" keys (by default). It is
// safe for concurrent use, as the go-redis client is.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// Option configures a Store.
type Option func(*Store)

// WithKeyPrefix replaces DefaultKeyPrefix, for example to keep tests that
// share one Redis server apart.
func WithKeyPrefix(prefix string) Option { return func(s *Store) { s.prefix = prefix } }

// New returns a Store using rdb. The caller owns rdb and closes it.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: DefaultKeyPrefix}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("pinging redis: %w", err)
	}
	return nil
}

// Put stores value under id, replacing any previous value.
func (s *Store) Put(ctx context.Context, id string, value []byte) error {
	if err := s.rdb.Set(ctx, s.prefix+id, value, 0).Err(); err != nil {
		return fmt.Errorf("storing item %q: %w", id, err)
	}
	return nil
}

// Get returns the value stored under id, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (string, error) {
	v, err := s.rdb.Get(ctx, s.prefix+id).Result()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("reading item %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("reading item %q: %w", id, err)
	}
	return v, nil
}

// Delete removes id, returning an error wrapping ErrNotFound when it did
// not exist.
func (s *Store) Delete(ctx context.Context, id string) error {
	n, err := s.rdb.Del(ctx, s.prefix+id).Result()
	if err != nil {
		return fmt.Errorf("deleting item %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("deleting item %q: %w", id, ErrNotFound)
	}
	return nil
}

// ScanIDs appends to dst the ids of up to limit items, walking the keyspace
// with SCAN (never KEYS), and returns the extended slice. The order is
// Redis's; callers that need one sort. SCAN may return a key more than once
// (while Redis rehashes), so callers that need distinct ids dedupe.
func (s *Store) ScanIDs(ctx context.Context, dst []string, limit int) ([]string, error) {
	var cursor uint64
	start := len(dst)
	for len(dst)-start < limit {
		keys, next, err := s.rdb.Scan(ctx, cursor, s.prefix+"*", scanCount).Result()
		if err != nil {
			return dst, fmt.Errorf("scanning items: %w", err)
		}
		for _, k := range keys {
			if len(dst)-start == limit {
				break
			}
			// MATCH patterns treat glob characters in the prefix as globs,
			// so a key may match without carrying the prefix: skip it.
			if id, ok := strings.CutPrefix(k, s.prefix); ok {
				dst = append(dst, id)
			}
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	return dst, nil
}

// GetMany reads the items ids in batches and calls fn for each one in
// order, with found false for an id deleted since it was listed. keys is
// scratch space for the batch's keys; GetMany returns it for reuse.
func (s *Store) GetMany(ctx context.Context, ids []string, keys []string, fn func(i int, value string, found bool) error) ([]string, error) {
	for start := 0; start < len(ids); start += mgetBatch {
		end := min(start+mgetBatch, len(ids))
		keys = keys[:0]
		for _, id := range ids[start:end] {
			keys = append(keys, s.prefix+id)
		}
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return keys, fmt.Errorf("reading %d items: %w", len(keys), err)
		}
		for j, v := range vals {
			str, ok := v.(string)
			if err := fn(start+j, str, ok); err != nil {
				return keys, err
			}
		}
	}
	return keys, nil
}

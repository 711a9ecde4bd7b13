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

// ReadChunkBytes bounds the bytes of whole items one MGET reads (by their
// STRLEN), so that a batch of large items is never one huge reply held in
// memory at once. An item larger than it is read alone.
const ReadChunkBytes = 4 << 20

// SummaryKeyPrefix is put before an item's key to name the key of its
// summary: "summary:item:<id>" by default. It is outside the item keys'
// SCAN pattern.
const SummaryKeyPrefix = "summary:"

// Store reads and writes items as JSON values under "item:<id>" keys (by
// default), each with a summary (its name and tags, as JSON) under
// "summary:item:<id>", so that a list can read names without payloads. It
// is safe for concurrent use, as the go-redis client is.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// ItemKey returns the Redis key of the item id.
func (s *Store) ItemKey(id string) string { return s.prefix + id }

// SummaryKey returns the Redis key of the summary of the item id.
func (s *Store) SummaryKey(id string) string { return SummaryKeyPrefix + s.prefix + id }

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

// Put stores value under id and summary beside it, replacing any previous
// ones, in one MULTI/EXEC transaction: a reader sees both or neither.
func (s *Store) Put(ctx context.Context, id string, value, summary []byte) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.prefix+id, value, 0)
		p.Set(ctx, s.SummaryKey(id), summary, 0)
		return nil
	})
	if err != nil {
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
	n, err := s.rdb.Del(ctx, s.prefix+id, s.SummaryKey(id)).Result()
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

// GetSummaries reads the summaries of the items ids in batches and calls
// fn for each one in order, with found false for an id deleted since it
// was listed. An item stored before summaries existed has none: for it,
// fn gets the whole stored item instead, which holds the same name and
// tags. keys is scratch space; GetSummaries returns it for reuse.
func (s *Store) GetSummaries(ctx context.Context, ids []string, keys []string, fn func(i int, value string, found bool) error) ([]string, error) {
	var missing []int
	for start := 0; start < len(ids); start += mgetBatch {
		end := min(start+mgetBatch, len(ids))
		keys = keys[:0]
		for _, id := range ids[start:end] {
			keys = append(keys, s.SummaryKey(id))
		}
		sums, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return keys, fmt.Errorf("reading %d item summaries: %w", len(keys), err)
		}
		missing = missing[:0]
		for j, v := range sums {
			if _, ok := v.(string); !ok {
				missing = append(missing, j)
			}
		}
		if len(missing) == 0 {
			for j, v := range sums {
				str, ok := v.(string)
				if err := fn(start+j, str, ok); err != nil {
					return keys, err
				}
			}
			continue
		}
		// Whole items for those without a summary, read in chunks: call
		// fn in order, for the summaries before each item as it comes.
		keys = keys[:0]
		for _, j := range missing {
			keys = append(keys, s.prefix+ids[start+j])
		}
		next := 0 // the next index of sums to hand to fn
		err = s.mgetChunked(ctx, keys, func(m int, v any) error {
			for ; next < missing[m]; next++ {
				str, ok := sums[next].(string)
				if err := fn(start+next, str, ok); err != nil {
					return err
				}
			}
			next++
			str, ok := v.(string)
			return fn(start+missing[m], str, ok)
		})
		if err != nil {
			return keys, err
		}
		for ; next < len(sums); next++ {
			str, ok := sums[next].(string)
			if err := fn(start+next, str, ok); err != nil {
				return keys, err
			}
		}
	}
	return keys, nil
}

// mgetChunked reads keys (at most mgetBatch) with as few MGETs as keep
// each reply under ReadChunkBytes, by the values' STRLEN read first, and
// calls fn with each value in order (nil for a missing key).
func (s *Store) mgetChunked(ctx context.Context, keys []string, fn func(i int, v any) error) error {
	lens := make([]*redis.IntCmd, len(keys))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			lens[i] = p.StrLen(ctx, k)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sizing %d items: %w", len(keys), err)
	}
	for start := 0; start < len(keys); {
		end, size := start+1, lens[start].Val()
		for end < len(keys) && size+lens[end].Val() <= ReadChunkBytes {
			size += lens[end].Val()
			end++
		}
		vals, err := s.rdb.MGet(ctx, keys[start:end]...).Result()
		if err != nil {
			return fmt.Errorf("reading %d items: %w", end-start, err)
		}
		for j, v := range vals {
			if err := fn(start+j, v); err != nil {
				return err
			}
		}
		start = end
	}
	return nil
}

// GetMany reads the items ids in batches, each read in chunks of at most
// ReadChunkBytes, and calls fn for each one in order, with found false for an id deleted since it was listed. keys is
// scratch space for the batch's keys; GetMany returns it for reuse.
func (s *Store) GetMany(ctx context.Context, ids []string, keys []string, fn func(i int, value string, found bool) error) ([]string, error) {
	for start := 0; start < len(ids); start += mgetBatch {
		end := min(start+mgetBatch, len(ids))
		keys = keys[:0]
		for _, id := range ids[start:end] {
			keys = append(keys, s.prefix+id)
		}
		err := s.mgetChunked(ctx, keys, func(j int, v any) error {
			str, ok := v.(string)
			return fn(start+j, str, ok)
		})
		if err != nil {
			return keys, err
		}
	}
	return keys, nil
}

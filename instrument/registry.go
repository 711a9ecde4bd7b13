package instrument

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ErrDuplicateName is returned (wrapped) by Registry.Register when a pool
// with the same name is already registered.
var ErrDuplicateName = errors.New("duplicate pool name")

// StatsSource is what a Registry lists: anything with a name and cumulative
// pool statistics, such as *Pool[T]. Implementations must be safe to call
// from any goroutine, concurrently with the pool's own use.
type StatsSource interface {
	Name() string
	Stats() Stats
}

// PoolStats is one pool's name and counters, as returned by
// Registry.Snapshot.
type PoolStats struct {
	Name string
	Stats
}

// Registry lists pools for exporters. It holds no global state: create one
// per process (or per test) and pass it to the exporters. The zero value is
// ready to use. A Registry is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	pools map[string]StatsSource
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds pools to the registry. It fails, registering none of them,
// when a name is invalid or already present.
func (r *Registry) Register(pools ...StatsSource) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(pools))
	for _, p := range pools {
		name := p.Name()
		if err := ValidateName(name); err != nil {
			return fmt.Errorf("registering pool: %w", err)
		}
		if _, ok := r.pools[name]; ok || seen[name] {
			return fmt.Errorf("registering pool %q: %w", name, ErrDuplicateName)
		}
		seen[name] = true
	}
	if r.pools == nil {
		r.pools = make(map[string]StatsSource, len(pools))
	}
	for _, p := range pools {
		r.pools[p.Name()] = p
	}
	return nil
}

// Unregister removes the pool with the given name and reports whether it
// was present.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pools[name]
	delete(r.pools, name)
	return ok
}

// Snapshot reads every registered pool's counters, sorted by name.
func (r *Registry) Snapshot() []PoolStats {
	r.mu.RLock()
	out := make([]PoolStats, 0, len(r.pools))
	for name, p := range r.pools {
		out = append(out, PoolStats{Name: name, Stats: p.Stats()})
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

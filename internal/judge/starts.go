package judge

import (
	"sync"
	"time"
)

// DefaultMaxStarts bounds the rollouts a Starts remembers when its max is 0.
const DefaultMaxStarts = 4096

// Starts remembers when each rollout was first judged, for callers that do
// not say when the rollout started (Flagger's webhook payload has no start
// time): the first judgement's time is the rollout's start from then on, so
// the sequential evidence starts at a fixed time that does not depend on
// what it shows, which keeps its guarantee. A key is a rollout's identity
// (Flagger: namespace, name and checksum, so that a new revision starts
// again). Past max keys, the oldest start is forgotten; a forgotten or
// restarted rollout starts again, later: less evidence, never a wrong
// guarantee. Safe for concurrent use.
type Starts struct {
	mu    sync.Mutex
	max   int
	m     map[string]time.Time
	order []string
}

// NewStarts returns a Starts that remembers at most max rollouts
// (DefaultMaxStarts for max <= 0).
func NewStarts(max int) *Starts {
	if max <= 0 {
		max = DefaultMaxStarts
	}
	return &Starts{max: max, m: map[string]time.Time{}}
}

// Since returns the start of key: the now of its first call.
func (s *Starts) Since(key string, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.m[key]; ok {
		return t
	}
	if len(s.order) >= s.max {
		delete(s.m, s.order[0])
		s.order = s.order[1:]
	}
	s.m[key] = now
	s.order = append(s.order, key)
	return now
}

// Len returns how many rollouts are remembered.
func (s *Starts) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

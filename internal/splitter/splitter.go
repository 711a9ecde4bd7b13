// Package splitter is a weighted HTTP reverse proxy that sends each request
// to one of two backends, the way a Kubernetes Service (or a Gateway
// HTTPRoute with weighted backendRefs) splits traffic between a stable and a
// gray Deployment. The local demo puts it in front of the two service
// instances so that the load generator sees one address.
//
// # Concurrency
//
// A Splitter is safe for concurrent use: ServeHTTP may be called from any
// number of goroutines, and Stats may be called at any time.
package splitter

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Track names a backend of the split.
type Track int

// The two tracks of a split.
const (
	Stable Track = iota
	Gray
)

// String returns "stable" or "gray".
func (t Track) String() string {
	if t == Gray {
		return "gray"
	}
	return "stable"
}

// ErrWeight is returned by New when the gray weight is outside 0..100.
var ErrWeight = errors.New("splitter: gray weight must be between 0 and 100")

// Stats are the cumulative counts of requests the splitter forwarded to one
// track. Errors counts responses with a 5xx status, including the 502s the
// proxy itself writes when the backend cannot be reached.
type Stats struct {
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
}

// Splitter forwards each request to the gray backend with probability
// GrayWeight/100 and to the stable backend otherwise.
type Splitter struct {
	grayWeight int
	proxies    [2]*httputil.ReverseProxy
	requests   [2]atomic.Uint64
	errors     [2]atomic.Uint64

	mu  sync.Mutex // guards rnd
	rnd *rand.Rand
}

// New returns a Splitter in front of stable and gray. grayWeight is the
// percentage (0..100) of requests sent to gray. seed makes the sequence of
// choices reproducible.
func New(stable, gray *url.URL, grayWeight int, seed uint64) (*Splitter, error) {
	if grayWeight < 0 || grayWeight > 100 {
		return nil, fmt.Errorf("%w (got %d)", ErrWeight, grayWeight)
	}
	if stable == nil || gray == nil {
		return nil, errors.New("splitter: both backends are required")
	}
	s := &Splitter{
		grayWeight: grayWeight,
		rnd:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	// One transport with room for many idle connections per backend: the
	// default keeps two, which under concurrent load churns connections.
	transport := &http.Transport{
		Proxy:               nil, // never leave the machine through a proxy
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     30 * time.Second,
	}
	for i, u := range []*url.URL{stable, gray} {
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = transport
		track := Track(i)
		p.ModifyResponse = func(r *http.Response) error {
			if r.StatusCode >= 500 {
				s.errors[track].Add(1)
			}
			return nil
		}
		p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
			s.errors[track].Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			body, _ := json.Marshal(map[string]string{"error": "splitter: " + track.String() + " backend: " + err.Error()})
			_, _ = w.Write(append(body, '\n'))
		}
		s.proxies[i] = p
	}
	return s, nil
}

// Pick chooses the track for the next request.
func (s *Splitter) Pick() Track {
	s.mu.Lock()
	n := s.rnd.IntN(100)
	s.mu.Unlock()
	if n < s.grayWeight {
		return Gray
	}
	return Stable
}

// ServeHTTP forwards r to the chosen backend.
func (s *Splitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := s.Pick()
	s.requests[t].Add(1)
	s.proxies[t].ServeHTTP(w, r)
}

// Close closes the idle connections to the backends.
func (s *Splitter) Close() {
	if t, ok := s.proxies[0].Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}

// Stats returns the cumulative counts for a track.
func (s *Splitter) Stats(t Track) Stats {
	return Stats{Requests: s.requests[t].Load(), Errors: s.errors[t].Load()}
}

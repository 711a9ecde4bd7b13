// Package instrumenttest holds test helpers for code that reads pool
// statistics, such as the exporters: a StatsSource whose counts never
// change, and a registry of two such pools with known counts.
package instrumenttest

import (
	"testing"

	"github.com/poolparity/poolparity/instrument"
)

// Fixed is an instrument.StatsSource with fixed counts, so exporter output
// can be compared exactly, even under -race (where sync.Pool drops Puts at
// random). It is safe for concurrent use: it never changes.
type Fixed struct {
	PoolName string
	Counts   instrument.Stats
}

// Name returns the pool name.
func (f Fixed) Name() string { return f.PoolName }

// Stats returns the fixed counts.
func (f Fixed) Stats() instrument.Stats { return f.Counts }

// SampleRegistry returns a registry of two Fixed pools:
//
//	json_buffer:    Gets 10, Misses 2, Puts 7, Drops 1
//	report_scratch: Gets 5,  Misses 5, Puts 0, Drops 5
//
// It fails the test if they cannot be registered.
func SampleRegistry(tb testing.TB) *instrument.Registry {
	tb.Helper()
	r := instrument.NewRegistry()
	err := r.Register(
		Fixed{PoolName: "json_buffer", Counts: instrument.Stats{Gets: 10, Misses: 2, Puts: 7, Drops: 1, Dirty: 1}},
		Fixed{PoolName: "report_scratch", Counts: instrument.Stats{Gets: 5, Misses: 5, Puts: 0, Drops: 5}},
	)
	if err != nil {
		tb.Fatalf("registering the sample pools: %v", err)
	}
	return r
}

//go:build race

package instrument_test

// raceEnabled reports whether the race detector is on. Under -race,
// sync.Pool drops a random quarter of Puts and Gets may skip the pool, so
// tests assert hit-independent invariants only.
const raceEnabled = true

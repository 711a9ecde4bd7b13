//go:build !race

package controller_test

// raceEnabled is true when the tests run with the race detector (race_on_test.go).
const raceEnabled = false

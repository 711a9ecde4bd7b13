//go:build race

package controller_test

// raceEnabled is true when the tests run with the race detector, which slows the controller
// several times: TestFleetOnTime then sizes its fleet to that.
const raceEnabled = true

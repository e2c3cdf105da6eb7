//go:build race

package gcsreporter_test

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = true

//go:build race

package ingest_test

// raceEnabled is true under the race detector, which makes the large
// round trip ten times slower; it uses fewer features then.
const raceEnabled = true

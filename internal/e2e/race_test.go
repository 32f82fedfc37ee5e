//go:build race

package e2e

// raceEnabled builds the server under test with -race too, when the tests
// themselves run with -race.
const raceEnabled = true

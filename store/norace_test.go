//go:build !race

package store

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = false

//go:build !race

package http

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = false

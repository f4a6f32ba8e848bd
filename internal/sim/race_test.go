//go:build race

package sim

// raceEnabled reports whether the race detector is on; the heaviest timing
// tests skip under it.
const raceEnabled = true

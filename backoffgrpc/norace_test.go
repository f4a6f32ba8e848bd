//go:build !race

package backoffgrpc

// raceEnabled reports whether the race detector is on.
const raceEnabled = false

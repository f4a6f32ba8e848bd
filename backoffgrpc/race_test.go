//go:build race

package backoffgrpc

// raceEnabled reports whether the race detector is on, for the tests whose
// allocation counts it changes. (A copy of the root's internal/race, which
// another module must not import.)
const raceEnabled = true

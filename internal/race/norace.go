//go:build !race

// Package race reports whether the race detector is on, for the tests whose
// allocation counts or timings it changes.
package race

// Enabled reports whether the race detector is on.
const Enabled = false

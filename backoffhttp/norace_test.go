//go:build !race

package backoffhttp

const raceEnabled = false

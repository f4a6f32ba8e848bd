package sim

import (
	"time"

	"github.com/backoffgo/backoff"
)

// Ticker returns the offset source of the library's [backoff.Ticker] as a
// contender for [Periodic]: its first delay is rng.Int64N(Cap) (0 for Cap <= 0),
// the draw the Ticker makes with a seeded Rng, its own rule for placing one tick in its window, drawn afresh for
// every job and every period (Periodic hands it Cap = Interval). It is not
// a retry policy and is not part of [All]; after the first delay it gives
// up. Its name is "ticker".
func Ticker() Contender {
	return Contender{Name: "ticker", New: func(c backoff.Config, rng backoff.Rng) (backoff.Policy, error) {
		interval := c.Cap
		return backoff.PolicyFunc(func(attempt int, _ error) (time.Duration, error) {
			if attempt >= 2 {
				return 0, backoff.ErrExhausted
			}
			if interval <= 0 {
				return 0, nil
			}
			return time.Duration(rng.Int64N(int64(interval))), nil
		}), nil
	}}
}

// NoOffset returns the "no offset" baseline for [Periodic]: every execution
// starts on time, so the whole fleet fires at each multiple of the interval.
// Its name is "no-offset"; it is a hand-written baseline, not part of the
// library.
func NoOffset() Contender {
	return Contender{Name: "no-offset", Baseline: true, New: func(backoff.Config, backoff.Rng) (backoff.Policy, error) {
		return backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 0, backoff.ErrExhausted }), nil
	}}
}

package backoff

import "time"

// ceiling returns min(cap, base·2^(attempt−1)), the exponential family's
// upper bound for the delay after the given attempt. Every policy that needs
// it calls this one function, so they cannot drift apart.
//
// It requires 0 < base <= cap and treats attempt < 1 as 1. The result is
// exact for every attempt up to math.MaxInt and every base and cap up to
// math.MaxInt64: it is never negative, never wraps and uses no floating
// point. Instead of doubling attempt−1 times it asks in one step whether
// base·2^shift would pass cap, using base·2^shift <= cap ⇔ base <= cap>>shift
// (exact for integers), so it costs O(1), which is within the
// O(min(attempt, log₂(cap/base))) of the doubling loop the tests compare it
// with.
func ceiling(base, cap time.Duration, attempt int) time.Duration {
	if attempt < 1 { // "<= 1" is equivalent: it sets 1 to 1
		attempt = 1
	}
	// An unsigned shift count that is known to be at most 62 compiles to a
	// bare shift: no check for a negative count, none for 64 or more.
	shift := uint(attempt - 1)
	if shift > 62 || base > cap>>shift { // "> 63" is equivalent: cap>>63 is 0, below base
		return cap
	}
	return base << shift
}

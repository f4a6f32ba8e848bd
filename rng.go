package backoff

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/backoffgo/backoff/internal/nilness"
)

// Rng is the source of randomness a jittered policy draws from, given at
// construction; no policy falls back to a global source. Int64N returns a
// uniformly distributed value in [0, n) and may assume n > 0. A
// *math/rand/v2.Rand is an Rng for one goroutine only; a policy shared by
// goroutines needs [RuntimeRng] or [NewSeededRng].
type Rng interface {
	Int64N(n int64) int64
}

// RuntimeRng draws from the Go runtime's per-thread ChaCha8 generator
// (math/rand/v2's top-level functions): safe for concurrent use, lock-free,
// not seedable. It is the source for production; its zero value is ready.
type RuntimeRng struct{}

// Int64N returns a uniformly distributed value in [0, n), for n > 0, by
// Lemire's exact method, as math/rand/v2 does.
func (RuntimeRng) Int64N(n int64) int64 {
	return uniform(RuntimeRng{}, 0, n-1)
}

// runtimeRand is a draw of the Go runtime's per-thread ChaCha8 generator,
// through math/rand/v2's public API (no linkname into the runtime).
func runtimeRand() uint64 { return rand.Uint64() }

// lemireReject finishes Lemire's method when the first product's low half
// lo is below bound and so may fall among the 2⁶⁴ mod bound values to
// reject, drawing again from next as often as it must.
func lemireReject(bound, hi, lo uint64, next func() uint64) uint64 {
	threshold := -bound % bound
	for lo < threshold {
		hi, lo = bits.Mul64(next(), bound)
	}
	return hi
}

// NewSeededRng returns an Rng that is safe for concurrent use and yields
// the same stream of draws for the same seed: a PCG generator behind a
// mutex. Which goroutine gets which draw depends on scheduling.
func NewSeededRng(seed uint64) Rng {
	return &lockedRng{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// lockedRng serializes access to a *rand.Rand with a mutex.
type lockedRng struct {
	mu sync.Mutex
	r  *rand.Rand
}

// Int64N returns a uniformly distributed value in [0, n). It panics if
// n <= 0, as rand.Rand.Int64N does.
func (l *lockedRng) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock() // a panic (n <= 0) must not leave the lock held
	return l.r.Int64N(n)
}

func checkRng(rng Rng) error {
	if nilness.IsNil(rng) {
		return &ParamError{Param: "Rng", Value: nil, Reason: "must not be nil; use RuntimeRng{} or NewSeededRng"}
	}
	return nil
}

// uniform returns a value drawn uniformly from [lo, hi], both ends included,
// for 0 <= lo <= hi. It makes one call to rng, or two when the range holds
// all 2⁶³ non-negative values and hi−lo+1 does not fit in an int64.
//
// A RuntimeRng is drawn from directly rather than through the interface,
// and first: the cheapest delay is the one production uses. Its bound
// hi−lo+1 is at most 2⁶³ and fits in a uint64, so it needs no special case
// for the whole range.
func uniform(rng Rng, lo, hi int64) int64 {
	span := uint64(hi - lo)
	if _, ok := rng.(RuntimeRng); ok {
		// RuntimeRng's draw, without the interface call.
		bound := span + 1
		v, low := bits.Mul64(runtimeRand(), bound) // Lemire: v is uniform over [0, bound) unless low < bound
		if low < bound {                           // "<=" is equivalent: lemireReject keeps low == bound, as 2⁶⁴ mod bound < bound
			v = lemireReject(bound, v, low, runtimeRand)
		}
		return lo + int64(v)
	}
	if span == math.MaxInt64 {
		return uniformAll(rng)
	}
	return lo + rng.Int64N(int64(span)+1)
}

// uniformAll draws from [0, MaxInt64], whose size does not fit in an int64:
// a top bit and 62 low bits, each uniform.
func uniformAll(rng Rng) int64 {
	return rng.Int64N(2)<<62 | rng.Int64N(1<<62)
}

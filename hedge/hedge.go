// Package hedge chooses when to hedge a request: send a second copy once the
// first has been outstanding longer than most recent requests took. A
// [Delay] keeps the latencies of recent successful attempts to one target
// and gives the matching quantile, from one knob, the share of extra load
// that hedging may add (as Finagle's BackupRequestFilter does).
//
// The package only measures; sending, cancelling and budgeting the copies
// is the caller's (backoffhttp's Transport, the simulator's client).
package hedge

import (
	"cmp"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/window"
)

// Config holds the parameters of a [Delay]; a zero field takes the default
// that its comment gives.
type Config struct {
	// MaxExtraLoad, in (0, 0.5], is the share of requests that may be
	// hedged: the delay is the (1 − MaxExtraLoad) quantile of the window's
	// latencies. Zero means 0.05.
	MaxExtraLoad float64

	// Window, at least 10 ms, is the span of latencies kept. Zero means
	// 10 s.
	Window time.Duration

	// MinSamples, at least 1, is the fewest latencies in the window for
	// [Delay.Hedge] to give a delay: no data, no hedge. Zero means 100.
	MinSamples int

	// Now, when not nil, is the clock in place of time.Now, as in
	// [backoff.BudgetConfig]. It must be safe for concurrent use.
	Now func() time.Time
}

const (
	slots      = window.Periods               // time buckets in a window
	subBits    = 3                            // log2 of the buckets per power of two
	sub        = 1 << subBits                 // buckets per power of two
	maxLatency = 1<<38 - 1                    // ns; longer latencies count as this
	topExp     = 37                           // bits.Len64(maxLatency) - 1
	numBuckets = sub + (topExp-subBits+1)*sub // 288
)

// Delay gives the delay before a hedge to one target: the
// (1 − MaxExtraLoad) quantile of the latencies observed over the last
// Window, once there are at least MinSamples of them.
//
// Latencies are counted in log-linear buckets: 8 per power of two of
// nanoseconds, exact below 8 ns. The delay is the largest latency of the
// bucket that holds the exact quantile x, so x ≤ delay ≤ x + x/8, and at
// most MaxExtraLoad of the window's latencies exceed it. A negative
// latency counts as 0 and one above 2³⁸−1 ns (about 4m35s) as 2³⁸−1 ns.
//
// The window counts in 10 time buckets of Window/10 (rounded down to the
// nanosecond) from NewDelay on: a latency observed at t counts until at
// least t + 9·Window/10 and not from t + Window on; a bucket counts at most
// 2³²−1 latencies of each size. The Delay's time is the latest reading of
// its clock, so a clock that goes back changes nothing.
//
// Hedge gives false exactly when the window holds fewer than MinSamples
// latencies. Its delay is computed at most about once per time bucket, by
// the first Hedge in the time bucket to find MinSamples, and given until
// the Delay's time enters a later time bucket: it counts every latency of
// the window's earlier time buckets but only those of the current one
// observed before that computation. A latency observed after it counts
// from the first Hedge in the next time bucket, which starts at most
// Window/10 later.
//
// A Delay is safe for concurrent use; Observe and Hedge take no lock and
// do not allocate. Hedge reads the clock and three words, except when it
// computes (concurrent first calls in a time bucket may each compute, and
// every call while the window holds fewer than MinSamples latencies does):
// then it reads every bucket (288 sizes × 10 time buckets). Its size is
// fixed, about 23 KB. A latency observed concurrently with a computation
// may or may not be counted.
type Delay struct {
	clock  window.Clock  // in time buckets
	period window.Period // of the counts
	// cached is the delay's bucket computed at a period, in one word:
	// (period+1)<<cacheShift | bucket; 0 before the first. Periods are
	// below 2⁴⁴ (a width is at least 1 ms), so they fit.
	cached atomic.Uint64
	extra  float64
	min    uint64
	// counts[b][s] counts latencies of bucket b in time bucket s, a
	// stamped word of package window.
	counts [numBuckets][slots]atomic.Uint64
}

// NewDelay returns a Delay with nothing observed, or a *[backoff.ParamError]
// naming the field of cfg that is out of range.
func NewDelay(cfg Config) (*Delay, error) {
	cfg.MaxExtraLoad, cfg.Window, cfg.MinSamples = cmp.Or(cfg.MaxExtraLoad, 0.05), cmp.Or(cfg.Window, 10*time.Second), cmp.Or(cfg.MinSamples, 100)
	if !(cfg.MaxExtraLoad > 0 && cfg.MaxExtraLoad <= 0.5) {
		return nil, &backoff.ParamError{Param: "MaxExtraLoad", Value: cfg.MaxExtraLoad, Reason: "must be in (0, 0.5]"}
	}
	if cfg.Window < 10*time.Millisecond {
		return nil, &backoff.ParamError{Param: "Window", Value: cfg.Window, Reason: "must be at least 10ms"}
	}
	if cfg.MinSamples < 1 {
		return nil, &backoff.ParamError{Param: "MinSamples", Value: cfg.MinSamples, Reason: "must be at least 1"}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Delay{clock: window.NewClock(now, cfg.Window/slots), extra: cfg.MaxExtraLoad, min: uint64(cfg.MinSamples)}, nil
}

// Observe counts the latency of one successful attempt. A nil *Delay
// ignores it.
func (d *Delay) Observe(latency time.Duration) {
	if d == nil {
		return
	}
	q := d.at(d.clock.Observe())
	window.Bump(&d.counts[bucket(int64(latency))][q%slots], q)
}

// Hedge returns the delay after which to send a hedge, and true; or 0 and
// false while the window holds fewer than MinSamples latencies, and for a
// nil *Delay. The delay may be 0 (every latency in the window was 0). It
// may miss latencies observed in the current time bucket (see [Delay]).
func (d *Delay) Hedge() (time.Duration, bool) {
	if d == nil {
		return 0, false
	}
	q := d.at(d.clock.Observe())
	c := d.cached.Load()
	if int64(c>>cacheShift) != q+1 {
		b, ok := d.compute(q)
		if !ok {
			return 0, false
		}
		c = uint64(q+1)<<cacheShift | uint64(b)
		d.cache(c)
	}
	return time.Duration(upper(int(c & (1<<cacheShift - 1)))), true
}

// cache stores the word c in d.cached unless that holds c's period or a
// later one: concurrent callers may each compute, and each stores one whole
// word; the first stored for a period is given until a later period's.
func (d *Delay) cache(c uint64) {
	for {
		old := d.cached.Load()
		if old>>cacheShift >= c>>cacheShift || d.cached.CompareAndSwap(old, c) {
			return
		}
	}
}

// cacheShift is the shift of the period in Delay.cached, above the bucket.
const cacheShift = 9

var _ [1<<cacheShift - numBuckets]struct{} // every bucket fits below the shift

// compute returns the bucket of the delay over the counts at period q, and
// true; or false when the window holds fewer than MinSamples latencies.
func (d *Delay) compute(q int64) (int, bool) {
	var per [numBuckets]uint64
	var n uint64
	for b := range d.counts {
		var c uint64
		for s := range d.counts[b] {
			c += window.Current(d.counts[b][s].Load(), q)
		}
		per[b] = c
		n += c
	}
	if n < d.min || n == 0 {
		return 0, false
	}
	// The k-th smallest, k = n − ⌊MaxExtraLoad·n⌋: at most
	// MaxExtraLoad·n latencies are above it.
	k := n - uint64(d.extra*float64(n))
	var seen uint64
	for b, c := range per {
		seen += c
		if seen >= k {
			return b, true
		}
	}
	return numBuckets - 1, true // not reached: seen ends at n ≥ k
}

// bucket returns the bucket that counts a latency of v ns.
func bucket(v int64) int {
	u := uint64(min(max(v, 0), maxLatency))
	if u < sub {
		return int(u)
	}
	e := bits.Len64(u) - 1
	return (e-subBits+1)*sub + int(u>>(e-subBits))&(sub-1)
}

// upper returns the largest latency, in ns, that bucket b counts.
func upper(b int) int64 {
	if b < sub {
		return int64(b)
	}
	e := b/sub + subBits - 1
	step := int64(1) << (e - subBits)
	return int64(sub+b%sub)*step + step - 1
}

// at moves the counts to period p when they are behind it, clearing the
// words that the new window no longer holds, and returns their period (see
// [window.Period.At]).
func (d *Delay) at(p int64) int64 {
	return d.period.At(p, func(h int64) {
		for b := range d.counts {
			for s := range d.counts[b] {
				window.Expire(&d.counts[b][s], h, p)
			}
		}
	})
}

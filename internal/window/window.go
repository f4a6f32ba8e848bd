// Package window is the lock-free sliding window of packages retryshare and
// hedge: a clock read in periods, and counters in 64-bit words stamped with
// the period they count.
//
// Time is cut into periods of a fixed width from an epoch; the window at
// period p holds the periods p−Periods+1 to p. A word holds a count in its
// low 32 bits and, in its high 32 bits, the low 32 bits of the period it
// counts (its stamp); the zero word counts nothing. A user keeps one word per
// period of the window (period mod Periods) for each thing it counts, and a
// [Period] for the set of words: the period they were moved to.
//
// A stamp is read relative to a period p, as the period within 2³¹ of p
// that has its low 32 bits. That is unambiguous while every word that is
// not zero counts a period within 2³¹ of its set's Period: [Period.At]
// keeps it so, when its caller clears every word of the set with [Expire].
//
// Every function is safe for concurrent use, takes no lock and does not
// allocate.
package window

import (
	"math"
	"sync/atomic"
	"time"
)

// Periods is the number of periods in a window.
const Periods = 10

// Clock reads a clock in periods. Its time is the latest period read, so a
// clock that goes back changes nothing. Make one with [NewClock]; a Clock
// must not be copied once used.
type Clock struct {
	latest atomic.Int64 // the latest period read; 0 at first
	now    func() time.Time
	epoch  time.Time
	width  int64 // ns per period
}

// NewClock returns a Clock whose period 0 starts at the reading of now made
// by this call, and whose periods are width long (at least 1 ns). now must
// be safe for concurrent use.
func NewClock(now func() time.Time, width time.Duration) Clock {
	return Clock{now: now, epoch: now(), width: int64(width)}
}

// Observe reads the clock, raises the Clock's latest period to the
// reading's, rounded down, and returns the latest period: at least 0 (a
// reading before the epoch gives a period below it), below 2⁶³ (a reading
// far ahead saturates), and never less than an earlier Observe returned.
func (c *Clock) Observe() int64 {
	r := int64(c.now().Sub(c.epoch)) / c.width
	for {
		h := c.latest.Load()
		if r <= h {
			return h
		}
		if c.latest.CompareAndSwap(h, r) {
			return r
		}
	}
}

// Period is the period that a set of words was moved to; the zero Period is
// at period 0.
type Period struct{ p atomic.Int64 }

// At moves the Period to p when it is behind p, and returns the Period's
// period: p when it moved, else the later or equal period it held. The one
// call that moves it from h to p calls expire(h) before it returns, and
// expire must [Expire] every word of the set with h and p; of concurrent
// calls, those that do not move it return without waiting for that.
func (x *Period) At(p int64, expire func(h int64)) int64 {
	for {
		h := x.p.Load()
		if p <= h {
			return h
		}
		if x.p.CompareAndSwap(h, p) {
			expire(h)
			return p
		}
	}
}

// Bump adds one to the count of word w for period p: w starts over at 1,
// stamped with p, when it is zero or counts an earlier period; it keeps its
// stamp when it counts p or a later period (a caller whose reading another
// has overtaken); its count stays at 2³²−1 once there.
func Bump(w *atomic.Uint64, p int64) {
	for {
		old := w.Load()
		next := uint64(uint32(p))<<32 | 1
		if n := old & math.MaxUint32; n != 0 && int32(uint32(p)-uint32(old>>32)) <= 0 { // this period or a later one
			if n == math.MaxUint32 {
				return
			}
			next = old + 1
		}
		if w.CompareAndSwap(old, next) {
			return
		}
	}
}

// Current returns the count of word w when w counts one of the window's
// periods at period p, or a later period (which a concurrent caller that
// read the clock later stamped), and 0 when it counts a period before the
// window, p−Periods or earlier.
func Current(w uint64, p int64) uint64 {
	// Sequentially, Expire has cleared every word older than the window
	// already (so "> Periods" is equivalent there); this check is for a
	// word that a concurrent mover has yet to clear.
	if int32(uint32(p)-uint32(w>>32)) >= Periods {
		return 0
	}
	return w & math.MaxUint32
}

// Expire clears word w, of a set that [Period.At] moves from period h to a
// later period p, when it counts a period that was at most h and is out of
// the window at p (p−Periods or earlier); it keeps a word of a later period
// than h, which a caller that read the clock later stamped.
func Expire(w *atomic.Uint64, h, p int64) {
	for {
		old := w.Load()
		if old&math.MaxUint32 == 0 {
			return
		}
		age := int64(int32(uint32(h) - uint32(old>>32))) // its period is h - age
		if age < 0 || h-age > p-Periods {
			return // a later period's, or still in the window
		}
		if w.CompareAndSwap(old, 0) {
			return
		}
	}
}

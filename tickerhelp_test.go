package backoff

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"
)

// pauseRng draws the middle of every range, interval/2 as a Ticker's
// offset, and counts its draws. After Pause(d), its next draw first sleeps
// for d: the goroutine of the Ticker's timer is paused there, as a stopped
// process or a starved goroutine would be, while the clock goes on. Under
// synctest the sleep is durably blocking, so the bubble's clock advances.
type pauseRng struct {
	draws atomic.Int64
	pause atomic.Int64 // the next draw's pause, in ns
}

func (p *pauseRng) Int64N(n int64) int64 {
	p.draws.Add(1)
	time.Sleep(time.Duration(p.pause.Swap(0)))
	return n / 2
}

// Pause makes the next draw sleep for d before it returns.
func (p *pauseRng) Pause(d time.Duration) { p.pause.Store(int64(d)) }

// tickerWindow is the index of the window that holds tick, for a Ticker
// started at start.
func tickerWindow(tick, start time.Time, interval time.Duration) int64 {
	return int64(tick.Sub(start) / interval)
}

// lowHighRng draws the lowest value of its first range, then the highest of
// every later one: tick 0 at the start of its window, every later tick at
// the end of its own.
type lowHighRng struct{ drawn atomic.Bool }

func (r *lowHighRng) Int64N(n int64) int64 {
	if r.drawn.Swap(true) {
		return n - 1
	}
	return 0
}

// reachable counts the weak pointers whose object is still reachable.
func reachable[T any](ws []weak.Pointer[T]) (n int) {
	for _, w := range ws {
		if w.Value() != nil {
			n++
		}
	}
	return n
}

// allStopped reports whether every Ticker state still reachable is stopped.
func allStopped(states []weak.Pointer[tickerState]) bool {
	for _, w := range states {
		if s := w.Value(); s != nil && !s.stopped.Load() {
			return false
		}
	}
	return true
}

// inBubble runs f in a synctest bubble as the subtest name, so that one
// bubble's failure does not skip the test's other bubbles.
func inBubble(t *testing.T, name string, f func(*testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
}

package backoff

import (
	"sync"
	"time"
)

// Ticker delivers one tick per interval, each at a random offset within its
// interval, so that a fleet of servers running the same periodic task does
// not fire in the same second.
//
// Tick k (k = 0, 1, 2, …) is due at start + k·interval + offsetₖ, where start
// is when NewTicker was called and offsetₖ is drawn uniformly from
// [0, interval) for each tick from the Rng given to NewTicker. Every tick
// therefore lies in its own window [start + k·interval, start + (k+1)·interval):
// ticks never drift, however long the ticker runs, and there is exactly one
// per window. Consecutive ticks are between 0 and 2·interval apart, interval
// on average.
//
// How wide the offset should be: the whole interval, as here. Servers whose
// clocks agree start their periodic work at the same moment; an offset drawn
// over the whole interval spreads N servers evenly, so a shared dependency
// sees about N/interval calls per unit of time instead of N at once. A narrow
// offset (a few hundred milliseconds on a one-minute job) leaves the whole
// fleet in that narrow band: the same trap as a constant jitter on top of a
// growing backoff. Where a task must not run twice within less than an
// interval, keep a fixed offset per server instead (one draw, then a plain
// time.Ticker).
//
// Like time.Ticker, C has a buffer of one tick and a tick that finds the
// buffer full is dropped: a slow receiver misses ticks rather than receiving
// a burst. A tick whose window has already passed (the process was paused)
// is skipped, and the next tick is drawn in the current window. Call Stop to
// release the ticker's timer.
type Ticker struct {
	// C delivers the ticks: the time at which each fired.
	C <-chan time.Time

	c        chan time.Time
	start    time.Time
	interval time.Duration
	rng      Rng

	mu      sync.Mutex
	timer   *time.Timer
	k       int64 // index of the window of the next tick
	stopped bool
}

// NewTicker returns a started Ticker, or a *[ParamError] when interval is
// not positive or rng is nil. The Ticker draws from rng on a goroutine of
// its timer, so rng must be safe for concurrent use ([RuntimeRng], or a
// [LockedRng] from [NewSeededRng] for reproducible offsets).
func NewTicker(interval time.Duration, rng Rng) (*Ticker, error) {
	if interval <= 0 {
		return nil, &ParamError{Param: "interval", Value: interval, Reason: "must be positive"}
	}
	if err := checkRng(rng); err != nil {
		return nil, err
	}
	c := make(chan time.Time, 1)
	t := &Ticker{C: c, c: c, start: time.Now(), interval: interval, rng: rng}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer = time.AfterFunc(t.untilNext(t.start), t.fire)
	return t, nil
}

// untilNext draws the offset of tick t.k, moving t.k to the window that
// holds now when its own has passed, and returns how long until it is due.
// t.mu must be held.
func (t *Ticker) untilNext(now time.Time) time.Duration {
	elapsed := now.Sub(t.start)
	if current := int64(elapsed / t.interval); current > t.k {
		t.k = current
	}
	due := time.Duration(t.k)*t.interval + TickOffset(t.interval, t.rng)
	return due - elapsed
}

// TickOffset returns the random offset of one tick of a [Ticker] with this
// interval: a duration drawn uniformly from [0, interval) with one draw from
// rng. It is the Ticker's whole rule for placing a tick in its window, given
// on its own so that a simulation in virtual time can place ticks exactly as
// the Ticker would. interval must be positive; TickOffset returns 0
// otherwise.
func TickOffset(interval time.Duration, rng Rng) time.Duration {
	if interval <= 0 {
		return 0
	}
	return time.Duration(uniform(rng, 0, int64(interval)-1))
}

// fire delivers tick t.k and schedules the next one.
func (t *Ticker) fire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	now := time.Now()
	select {
	case t.c <- now:
	default: // the receiver is behind: drop the tick, as time.Ticker does
	}
	t.k++
	t.timer.Reset(t.untilNext(now))
}

// Stop turns off the ticker: no tick is sent after Stop returns. It does not
// close C. Stop may be called more than once, from any goroutine.
func (t *Ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.timer.Stop()
}

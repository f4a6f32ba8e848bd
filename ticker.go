package backoff

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// idleRest is how long a Ticker rests after a tick went unreceived.
const idleRest = time.Millisecond

// Ticker delivers at most one tick per interval, each at a random offset
// within its interval, so that a fleet's periodic work is spread.
//
// The time from NewTicker on is cut into windows [start + k·interval,
// start + (k+1)·interval), and tick k is due at start + k·interval +
// rng.Int64N(interval) ns, drawn once per window. The Ticker sends tick k
// on C when its timer runs at or after that time, if the window has not
// ended: a late timer skips the ticks of windows passed and sends the
// current one at once if due. A tick stays in C until received or until its
// window ends, when it is withdrawn. So every tick carries a time in its own
// window, no window has two, and ticks never drift; a receiver waiting on C
// gets every tick, consecutive ticks between 0 and 2·interval apart.
//
// After a tick goes unreceived, the next is that of the first window that
// ends 1 ms or more after the withdrawal: an unread Ticker runs its timer
// at most twice per interval or per millisecond, whichever is longer.
// Ticks due more than math.MaxInt64 ns (about 292 years) after start are
// never sent. A Ticker no longer referenced is collected without Stop, as
// a time.Ticker is; its timer then runs at most once more, doing nothing.
type Ticker struct {
	// C delivers the ticks, each the time at which the Ticker read the
	// clock to send it.
	C <-chan time.Time

	s *tickerState // what the timer reaches: never the Ticker itself
}

// tickerState is a Ticker's state. Its timer holds it but not the Ticker,
// so that an abandoned Ticker is collected; the Ticker's cleanup then
// marks the state stopped, which its timer, on its next run, obeys.
type tickerState struct {
	c        chan time.Time
	start    time.Time
	interval time.Duration
	rng      Rng
	stopped  atomic.Bool // by Stop, or by the cleanup of an abandoned Ticker

	mu     sync.Mutex
	timer  *time.Timer
	k      int64         // the window of the tick to send, or of the tick sent
	offset time.Duration // tick k's offset in its window; -1 until drawn
	sent   bool          // tick k has been sent, and the timer waits for its window's end
}

// NewTicker returns a started Ticker, or a *[ParamError] when interval is
// not positive or rng is nil. rng is drawn from on the timer's goroutine, so
// it must be safe for concurrent use ([RuntimeRng], [NewSeededRng]).
func NewTicker(interval time.Duration, rng Rng) (*Ticker, error) {
	if interval <= 0 {
		return nil, &ParamError{Param: "interval", Value: interval, Reason: "must be positive"}
	}
	if err := checkRng(rng); err != nil {
		return nil, err
	}
	c := make(chan time.Time, 1)
	s := &tickerState{c: c, start: time.Now(), interval: interval, rng: rng, offset: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, _ := s.step() // tick 0 is due before interval, never out of range
	s.timer = time.AfterFunc(d, s.fire)
	t := &Ticker{C: c, s: s}
	// Cleanups run outside any synctest bubble, and stopping a bubble's
	// timer from there is a fatal error: the cleanup only sets the flag,
	// and the timer obeys it on its next run.
	runtime.AddCleanup(t, func(s *tickerState) { s.stopped.Store(true) }, s)
	return t, nil
}

// fire runs when the timer expires.
func (s *tickerState) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() { // after Stop, or once the Ticker was collected
		return
	}
	if d, ok := s.step(); ok {
		s.timer.Reset(d)
	}
}

// step brings the ticker up to the clock, read once: it withdraws a tick
// whose window has ended, skips windows that have passed, draws the offset
// of the current tick and sends it when due. It returns how long until it
// must run again, and false when never. s.mu must be held.
func (s *tickerState) step() (time.Duration, bool) {
	now := time.Now()
	elapsed := now.Sub(s.start)
	if s.sent { // tick s.k's window has ended
		s.sent = false
		// Whatever the clock says, never two ticks in window s.k. ("s.k - 1"
		// is equivalent in practice: the timer that ends window s.k fires at
		// or after its end, so the move below reaches s.k + 1 anyway.)
		s.move(s.k + 1)
		select {
		case <-s.c: // nobody received it: rest (the addition saturates)
			s.move(int64((min(elapsed, math.MaxInt64-idleRest) + idleRest - 1) / s.interval))
		default:
		}
	}
	s.move(int64(elapsed / s.interval))
	if s.offset < 0 {
		s.offset = time.Duration(s.rng.Int64N(int64(s.interval)))
	}
	next, ok := s.sinceStart(s.k, s.offset)
	if ok && elapsed >= next {
		s.c <- now // C is empty: a sent tick is withdrawn before the next is sent
		s.sent = true
		next, ok = s.sinceStart(s.k, s.interval)
	}
	return next - time.Since(s.start), ok // a fresh reading: the draw may have taken time
}

// move makes window k current, unless the current window is later.
func (s *tickerState) move(k int64) {
	if k > s.k {
		s.k, s.offset = k, -1
	}
}

// sinceStart returns k·interval + d, the time since start of the moment d
// into window k, and false when that is beyond math.MaxInt64 ns.
func (s *tickerState) sinceStart(k int64, d time.Duration) (time.Duration, bool) {
	if k > (math.MaxInt64-int64(d))/int64(s.interval) {
		return 0, false
	}
	return time.Duration(k)*s.interval + d, true
}

// Stop turns off the Ticker and releases its timer: no tick is received
// from C (which holds at most one) after Stop returns, not even one sent
// before. It does not close C. It may be called again, from any goroutine.
func (t *Ticker) Stop() {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped.Store(true)
	s.timer.Stop()
	select {
	case <-s.c:
	default:
	}
}

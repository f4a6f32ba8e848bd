package backoff

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"
	"weak"
)

// TestTickerWindows: 10,000 ticks, each inside its own window
// [start + k·interval, start + (k+1)·interval): no drift, none missed, and
// the offsets spread over the whole interval.
func TestTickerWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Minute
		start := time.Now()
		tk := Must(NewTicker(interval, NewSeededRng(3)))
		defer tk.Stop()
		var bins [10]int
		for k := range 10_000 {
			tick := <-tk.C
			offset := tick.Sub(start) - time.Duration(k)*interval
			if offset < 0 || offset >= interval {
				t.Fatalf("tick %d at %v is outside its window (offset %v)", k, tick.Sub(start), offset)
			}
			if !tick.Equal(time.Now()) {
				t.Fatalf("tick %d carries %v, received at %v", k, tick, time.Now())
			}
			bins[offset*10/interval]++
		}
		for i, n := range bins { // 1000 expected per tenth; a fixed seed
			if n < 850 || n > 1150 {
				t.Errorf("offsets in tenth %d of the interval: %d of 10000, want about 1000 (%v)", i, n, bins)
			}
		}
	})
}

// TestTickerDrawsLikeInt64N: tick k's offset is rng.Int64N(interval), one
// draw per window and nothing else, so that a simulation drawing
// rng.Int64N(interval) per period places ticks exactly as the Ticker does.
// At the smallest interval every offset is 0: the bound is the interval
// itself, not one more.
func TestTickerDrawsLikeInt64N(t *testing.T) {
	inBubble(t, "seeded", func(t *testing.T) {
		const interval = time.Second
		tk := Must(NewTicker(interval, NewSeededRng(7)))
		defer tk.Stop()
		twin := NewSeededRng(7)
		for k := range 1000 {
			tick := <-tk.C
			if want := time.Duration(k)*interval + time.Duration(twin.Int64N(int64(interval))); tick.Sub(tk.s.start) != want {
				t.Fatalf("tick %d at %v, want %v", k, tick.Sub(tk.s.start), want)
			}
		}
	})
	inBubble(t, "1ns", func(t *testing.T) {
		tk := Must(NewTicker(1, extremeRng{high: true})) // 1ns: Int64N(1) = 0
		defer tk.Stop()
		for k := range 100 {
			if tick := <-tk.C; tick.Sub(tk.s.start) != time.Duration(k) {
				t.Fatalf("1ns ticker: tick %d at %v", k, tick.Sub(tk.s.start))
			}
		}
	})
}

// TestTickerLateTimer: when the timer's goroutine is paused (a stopped
// process, a starved goroutine), a tick is sent late only while its window
// lasts; a tick whose window has passed is skipped; and no window ever gets
// two ticks. Offsets are interval/2 and the pause starts at the end of
// window 0, when tick 1's offset is drawn.
func TestTickerLateTimer(t *testing.T) {
	for _, tt := range []struct {
		pause time.Duration
		want  []time.Duration // when the first ticks are received, since start
	}{
		{0, []time.Duration{500e6, 1500e6, 2500e6, 3500e6}},
		// Tick 1, due at 1.5 s, is sent at 1.7 s, still inside window 1.
		{700 * time.Millisecond, []time.Duration{500e6, 1700e6, 2500e6, 3500e6}},
		// Window 1 has passed at 2.7 s: tick 1 is skipped; tick 2, due at
		// 2.5 s, is sent at once.
		{1700 * time.Millisecond, []time.Duration{500e6, 2700e6, 3500e6, 4500e6}},
		// Windows 1 to 3 have passed at 4.2 s; tick 4 is due at 4.5 s.
		{3200 * time.Millisecond, []time.Duration{500e6, 4500e6, 5500e6, 6500e6}},
	} {
		inBubble(t, tt.pause.String(), func(t *testing.T) {
			const interval = time.Second
			rng := new(pauseRng)
			tk := Must(NewTicker(interval, rng))
			defer tk.Stop()
			rng.Pause(tt.pause)
			var got []time.Duration
			last := int64(-1)
			for range len(tt.want) {
				tick := <-tk.C
				w := tickerWindow(tick, tk.s.start, interval)
				if w <= last {
					t.Errorf("pause %v: a tick at %v, in window %d after a tick in window %d", tt.pause, tick.Sub(tk.s.start), w, last)
				}
				last = w
				got = append(got, tick.Sub(tk.s.start))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pause %v: ticks at %v, want %v", tt.pause, got, tt.want)
			}
		})
	}
}

// TestTickerWithdrawsUnreceivedTick: a tick not received by the end of its
// window is withdrawn, so a slow receiver never gets a stale tick, and the
// next tick is that of a later window.
func TestTickerWithdrawsUnreceivedTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Second
		tk := Must(NewTicker(interval, new(pauseRng))) // offsets interval/2
		defer tk.Stop()
		time.Sleep(1200 * time.Millisecond)
		select {
		case tick := <-tk.C:
			t.Errorf("at 1.2s, received the tick sent at %v, whose window has ended", tick.Sub(tk.s.start))
		default:
		}
		if tick := <-tk.C; tick.Sub(tk.s.start) != 1500*time.Millisecond {
			t.Errorf("next tick at %v, want tick 1's due time, 1.5s", tick.Sub(tk.s.start))
		}
		time.Sleep(5200 * time.Millisecond) // to 6.7 s: ticks 2 to 5 withdrawn
		if tick := <-tk.C; tick.Sub(tk.s.start) != 6500*time.Millisecond {
			t.Errorf("at 6.7s the tick received is from %v, want tick 6, sent at 6.5s and still in its window", tick.Sub(tk.s.start))
		}
	})
}

// TestTickerRestsWhenUnreceived: after a tick goes unreceived, the Ticker
// rests for idleRest, so a tiny interval that nobody receives from does not
// keep a core busy: one draw per idleRest, not one per interval.
func TestTickerRestsWhenUnreceived(t *testing.T) {
	inBubble(t, "1µs", func(t *testing.T) {
		const interval = time.Microsecond
		tk := Must(NewTicker(interval, new(pauseRng))) // offsets 500ns
		defer tk.Stop()
		time.Sleep(2 * interval)
		select {
		case tick := <-tk.C:
			t.Errorf("at 2µs, received the tick sent at %v, whose window has ended", tick.Sub(tk.s.start))
		default:
		}
		// Tick 0 was withdrawn at 1µs; the next is that of the first window
		// that ends at 1µs + 1ms or later, [1ms, 1ms+1µs), due 500ns into it.
		if tick, want := <-tk.C, idleRest+500; tick.Sub(tk.s.start) != want {
			t.Errorf("after the rest the tick is at %v, want %v", tick.Sub(tk.s.start), want)
		}
	})
	inBubble(t, "1ns-draws", func(t *testing.T) {
		rng := new(pauseRng)
		tk := Must(NewTicker(1, rng)) // 1ns
		defer tk.Stop()
		for _, d := range []time.Duration{100 * time.Microsecond, 10 * idleRest} {
			time.Sleep(d - time.Since(tk.s.start))
			if n, most := rng.draws.Load(), 2+int64(d/idleRest); n > most {
				t.Fatalf("a 1ns Ticker with no receiver drew %d offsets in %v, want at most %d", n, d, most)
			}
		}
		if tick := <-tk.C; time.Since(tick) != 0 || time.Since(tk.s.start) > 10*idleRest+idleRest+1 {
			t.Errorf("a receiver back at %v receives the tick sent at %v, at %v", 10*idleRest, tick.Sub(tk.s.start), time.Since(tk.s.start))
		}
	})
}

// TestTickerRestEdge: with an interval of 1 ms or more, the tick after an
// unreceived one is that of the next window, 1 ms included (it was the
// window after, the withdrawal at 1 ms plus the rest landing on window 2's
// start).
func TestTickerRestEdge(t *testing.T) {
	for _, interval := range []time.Duration{idleRest, 2 * idleRest, 10 * idleRest} {
		inBubble(t, interval.String(), func(t *testing.T) {
			tk := Must(NewTicker(interval, new(pauseRng))) // offsets interval/2
			defer tk.Stop()
			time.Sleep(interval + interval/4) // tick 0 withdrawn at interval
			if tick, want := <-tk.C, interval+interval/2; tick.Sub(tk.s.start) != want {
				t.Errorf("after tick 0 went unreceived, the next is at %v, want %v (window 1)", tick.Sub(tk.s.start), want)
			}
		})
	}
}

// TestTickerHugeIntervals: tick k is due at k·interval + offset after
// start, exactly, however large the interval; a tick due beyond
// math.MaxInt64 ns is never sent (it used to overflow and fire at once).
// The bubble's clock cannot go past 2262, 262 years after its start.
func TestTickerHugeIntervals(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, tt := range []struct {
		name     string
		interval time.Duration
		rng      Rng
		want     []time.Duration // every tick up to the bubble's year 2250
	}{
		// Tick 1 would be due at 1.5·MaxInt64 ns.
		{"MaxInt64/half", math.MaxInt64, new(pauseRng), []time.Duration{math.MaxInt64 / 2}},
		// Tick 1 would be due at 2·MaxInt64 - 1 ns, 2·MaxInt64 - 1 after tick 0.
		{"MaxInt64/low-high", math.MaxInt64, new(lowHighRng), []time.Duration{0}},
		// Tick 1 would be due at 300 years.
		{"200y/half", 200 * year, new(pauseRng), []time.Duration{100 * year}},
		// Tick 1 would be due at 400 years - 1 ns, as long after tick 0.
		{"200y/low-high", 200 * year, new(lowHighRng), []time.Duration{0}},
		// Tick 1 is due at 200 years; window 1 ends beyond MaxInt64 ns.
		{"200y/low", 200 * year, extremeRng{}, []time.Duration{0, 200 * year}},
	} {
		inBubble(t, tt.name, func(t *testing.T) {
			tk := Must(NewTicker(tt.interval, tt.rng))
			defer tk.Stop()
			var got []time.Duration
			horizon := time.After(250 * year)
			for {
				select {
				case tick := <-tk.C:
					got = append(got, tick.Sub(tk.s.start))
					continue
				case <-horizon:
				}
				break
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("interval %v: ticks at %v, want %v", tt.interval, got, tt.want)
			}
		})
	}
}

// TestTickerStop: no tick is received after Stop returns, not even one sent
// before Stop and not yet received (time.Ticker's contract since Go 1.23).
func TestTickerStop(t *testing.T) {
	inBubble(t, "after-receive", func(t *testing.T) {
		tk := Must(NewTicker(time.Second, RuntimeRng{}))
		<-tk.C
		tk.Stop()
		tk.Stop() // twice is fine
		time.Sleep(time.Hour)
		select {
		case tick := <-tk.C:
			t.Errorf("a tick at %v after Stop", tick)
		default:
		}
	})
	inBubble(t, "sent-before-Stop", func(t *testing.T) {
		tk := Must(NewTicker(time.Second, extremeRng{})) // tick 0 at start
		time.Sleep(time.Millisecond)
		if len(tk.C) != 1 {
			t.Fatalf("tick 0 is not waiting in C at 1ms")
		}
		tk.Stop()
		select {
		case tick := <-tk.C:
			t.Errorf("the tick sent at %v before Stop was received after it", tick.Sub(tk.s.start))
		default:
		}
	})
	inBubble(t, "fire-after-Stop", func(t *testing.T) {
		// The timer expired and its goroutine ran fire only after Stop.
		tk := Must(NewTicker(time.Second, RuntimeRng{}))
		tk.Stop()
		tk.s.fire()
		time.Sleep(time.Hour)
		select {
		case tick := <-tk.C:
			t.Errorf("a tick at %v after Stop", tick.Sub(tk.s.start))
		default:
		}
	})
}

// TestTickerCollected: a Ticker that is no longer referenced is collected
// without Stop, as a time.Ticker is; its timer then runs at most once more,
// drawing nothing, and lets go of the Ticker's state.
func TestTickerCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rng := new(pauseRng)
		tickers := make([]weak.Pointer[Ticker], 1000)
		states := make([]weak.Pointer[tickerState], len(tickers))
		for i := range tickers {
			tk := Must(NewTicker(time.Millisecond, rng))
			tickers[i], states[i] = weak.Make(tk), weak.Make(tk.s)
		}
		defer func() { // so that a failure does not leave them running
			for _, w := range tickers {
				if tk := w.Value(); tk != nil {
					tk.Stop()
				}
			}
		}()
		// Some ticks sent, none received; at 10.25ms no timer is running.
		time.Sleep(10*time.Millisecond + 250*time.Microsecond)
		runtime.GC()
		if n := reachable(tickers); n != 0 {
			t.Errorf("%d of %d dropped Tickers are still reachable after GC", n, len(tickers))
		}
		// The cleanups run on a goroutine of their own, outside the bubble,
		// whose clock does not wait for them.
		for i := 0; !allStopped(states); i++ {
			if i == 1e6 {
				t.Fatal("the cleanups of the dropped Tickers have not run")
			}
			runtime.Gosched()
		}
		draws := rng.draws.Load()
		time.Sleep(time.Second)
		if n := rng.draws.Load() - draws; n != 0 {
			t.Errorf("the timers of dropped Tickers drew %d offsets in the second after GC, want 0", n)
		}
		runtime.GC()
		if n := reachable(states); n != 0 {
			t.Errorf("%d of %d timers still hold the state of a dropped Ticker a second after GC", n, len(states))
		}
	})
}

func TestNewTickerRejectsBadParameters(t *testing.T) {
	for _, tt := range []struct {
		interval time.Duration
		rng      Rng
		param    string
	}{
		{0, RuntimeRng{}, "interval"},
		{-time.Second, RuntimeRng{}, "interval"},
		{math.MinInt64, RuntimeRng{}, "interval"},
		{time.Second, nil, "Rng"},
		{time.Second, (*lockedRng)(nil), "Rng"},
	} {
		_, err := NewTicker(tt.interval, tt.rng)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param {
			t.Errorf("NewTicker(%v, %v) = %v, want a ParamError for %s", tt.interval, tt.rng, err, tt.param)
		}
	}
}

package backoff

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// TestTickerWindows: 10,000 ticks, each inside its own window
// [start + k·interval, start + (k+1)·interval): no drift, none missed, and
// the offsets spread over the whole interval.
func TestTickerWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Minute
		start := time.Now()
		tk := Must2(NewTicker(interval, NewSeededRng(3)))
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

func TestTickerStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := Must2(NewTicker(time.Second, RuntimeRng{}))
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
}

// TestTickerDropsForSlowReceiver: like time.Ticker, one tick is buffered and
// the rest of a slow receiver's ticks are dropped, not queued.
func TestTickerDropsForSlowReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		tk := Must2(NewTicker(time.Second, NewSeededRng(1)))
		defer tk.Stop()
		time.Sleep(5*time.Second + time.Nanosecond)
		if first := <-tk.C; first.Sub(start) >= time.Second {
			t.Errorf("the buffered tick is from %v, want window 0", first.Sub(start))
		}
		if next := <-tk.C; next.Sub(start) < 5*time.Second {
			t.Errorf("after a 5s pause the next tick is from %v, want window 5 or later", next.Sub(start))
		}
	})
}

// TestTickerSkipsPassedWindows: when the timer fires late (a paused
// process), the next tick is drawn in the window that holds now.
func TestTickerSkipsPassedWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := Must2(NewTicker(time.Second, extremeRng{high: false}))
		defer tk.Stop()
		tk.mu.Lock()
		defer tk.mu.Unlock()
		tk.k = 1
		if d := tk.untilNext(tk.start.Add(5500 * time.Millisecond)); tk.k != 5 || d != -500*time.Millisecond {
			t.Errorf("late by 4.5 windows: k = %d, due in %v; want window 5, due at once (-500ms)", tk.k, d)
		}
		tk.rng = extremeRng{high: true}
		if d := tk.untilNext(tk.start.Add(5500 * time.Millisecond)); d != 500*time.Millisecond-1 {
			t.Errorf("highest offset in window 5 due in %v, want 500ms-1ns", d)
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
		{time.Second, nil, "Rng"},
		{time.Second, (*lockedRng)(nil), "Rng"},
	} {
		_, err := NewTicker(tt.interval, tt.rng)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param {
			t.Errorf("NewTicker(%v, %v) = %v, want a ParamError for %s", tt.interval, tt.rng, err, tt.param)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		tk := Must2(NewTicker(1, RuntimeRng{})) // 1ns: every offset is 0
		defer tk.Stop()
		start := tk.start
		for k := range 100 {
			if tick := <-tk.C; tick.Sub(start) != time.Duration(k) {
				t.Fatalf("1ns ticker: tick %d at %v", k, tick.Sub(start))
			}
		}
	})
}

func TestTickOffset(t *testing.T) {
	for _, tt := range []struct {
		interval time.Duration
		rng      Rng
		want     time.Duration
	}{
		{time.Minute, extremeRng{high: false}, 0},
		{time.Minute, extremeRng{high: true}, time.Minute - 1},
		{1, extremeRng{high: true}, 0},
		{time.Duration(math.MaxInt64), extremeRng{high: true}, math.MaxInt64 - 1},
		{0, RuntimeRng{}, 0},
		{-time.Second, RuntimeRng{}, 0},
	} {
		if got := TickOffset(tt.interval, tt.rng); got != tt.want {
			t.Errorf("TickOffset(%v, %T) = %v, want %v", tt.interval, tt.rng, got, tt.want)
		}
	}
}

package window

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// word returns a word stamped with period p that counts n.
func word(p int64, n uint64) uint64 { return uint64(uint32(p))<<32 | n }

type manual struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func (c *manual) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); c.reads++; return c.t }
func (c *manual) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

var epoch = time.Unix(1e9, 0)

// TestClock: periods are width long from NewClock's reading; the clock going
// backwards, even before the epoch, leaves the latest period; a reading far
// ahead saturates.
func TestClock(t *testing.T) {
	const width = 3 * time.Nanosecond
	c := &manual{t: epoch}
	k := NewClock(c.now, width)
	if c.reads != 1 {
		t.Fatalf("NewClock read the clock %d times, want 1", c.reads)
	}
	for _, tc := range []struct {
		at   time.Duration // since epoch
		want int64
	}{
		{0, 0},
		{-time.Hour, 0}, // before the epoch
		{width - 1, 0},
		{width, 1},
		{7 * width, 7},
		{7*width + 2, 7},
		{2 * width, 7}, // backwards
		{-time.Hour, 7},
		{8 * width, 8},
		{1 << 62, 1 << 62 / 3},
		{math.MaxInt64, math.MaxInt64 / 3},
	} {
		c.set(epoch.Add(tc.at))
		if got := k.Observe(); got != tc.want {
			t.Fatalf("at epoch%+v: Observe() = %d, want %d", tc.at, got, tc.want)
		}
	}
	c.set(epoch.AddDate(1000, 0, 0)) // past what a Duration holds: Sub saturates
	if got := k.Observe(); got != math.MaxInt64/3 {
		t.Fatalf("1000 years on: Observe() = %d, want %d", got, int64(math.MaxInt64/3))
	}
}

// TestClockConcurrent: concurrent readers of a clock moving forwards and
// backwards each see their periods never decrease.
func TestClockConcurrent(t *testing.T) {
	c := &manual{t: epoch}
	k := NewClock(c.now, time.Nanosecond)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			last := int64(0)
			for i := range 1000 {
				if g == 0 {
					c.set(epoch.Add(time.Duration(i%7*i) * time.Nanosecond))
				}
				p := k.Observe()
				if p < last {
					t.Errorf("Observe() = %d after %d", p, last)
					return
				}
				last = p
			}
		})
	}
	wg.Wait()
}

// TestPeriodAt: At moves the Period only forwards, and the call that moves
// it, and only that one, calls expire with the period it moved from.
func TestPeriodAt(t *testing.T) {
	var x Period
	var calls []int64
	expire := func(h int64) { calls = append(calls, h) }
	for _, tc := range []struct {
		p, want int64
		calls   []int64
	}{
		{0, 0, nil}, // the zero Period is at 0: no move
		{5, 5, []int64{0}},
		{5, 5, nil},
		{3, 5, nil},
		{-1, 5, nil},
		{6, 6, []int64{5}},
		{1 << 40, 1 << 40, []int64{6}},
	} {
		calls = nil
		if got := x.At(tc.p, expire); got != tc.want || len(calls) != len(tc.calls) || len(calls) == 1 && calls[0] != tc.calls[0] {
			t.Fatalf("At(%d) = %d with expire(%v); want %d with expire(%v)", tc.p, got, calls, tc.want, tc.calls)
		}
	}
}

// TestPeriodAtConcurrent: of concurrent calls, exactly one moves the Period
// over each step it takes: the moves chain from 0 to the last period.
func TestPeriodAtConcurrent(t *testing.T) {
	const last = 2000
	var x Period
	var mu sync.Mutex
	moves := map[int64]int64{} // from h to p
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for p := int64(1); p <= last; p++ {
				if got := x.At(p, func(h int64) { mu.Lock(); moves[h] = p; mu.Unlock() }); got < p {
					t.Errorf("At(%d) = %d", p, got)
					return
				}
			}
		})
	}
	wg.Wait()
	h, n := int64(0), 0
	for h != last && n <= len(moves) {
		h = moves[h]
		n++
	}
	if h != last || n != len(moves) {
		t.Errorf("moves %v do not chain from 0 to %d", moves, last)
	}
}

// TestBump: a word starts over when it is zero or of an earlier period, is
// counted on when of this period or a later one, and saturates; the
// periods compare modulo 2³² within 2³¹ of each other.
func TestBump(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  uint64
		p    int64
		want uint64
	}{
		{"zero", 0, 5, word(5, 1)},
		{"zero at 0", 0, 0, word(0, 1)},
		{"same period", word(5, 3), 5, word(5, 4)},
		{"earlier period", word(4, 3), 5, word(5, 1)},
		{"later period", word(6, 3), 5, word(6, 4)},
		{"saturated", word(5, math.MaxUint32), 5, word(5, math.MaxUint32)},
		{"saturated, earlier", word(4, math.MaxUint32), 5, word(5, 1)},
		{"across 2³²", word(1<<32-1, 3), 1 << 32, word(1<<32, 1)},
		{"across 2³², later", word(1<<32, 3), 1<<32 - 1, word(1<<32, 4)},
		{"2³¹−1 earlier", word(1<<32+7-(1<<31-1), 3), 1<<32 + 7, word(1<<32+7, 1)},
		{"2³¹ earlier reads as later", word(1<<32+7-1<<31, 3), 1<<32 + 7, word(1<<32+7-1<<31, 4)},
		{"2³¹−1 later", word(7+1<<31-1, 3), 7, word(7+1<<31-1, 4)},
	} {
		var w atomic.Uint64
		w.Store(tc.old)
		Bump(&w, tc.p)
		if got := w.Load(); got != tc.want {
			t.Errorf("%s: %#x, Bump(%d): %#x; want %#x", tc.name, tc.old, tc.p, got, tc.want)
		}
	}
}

// TestCurrent: at period p, a word of p−9 to p, or of a later period,
// counts; one of p−10 (just out of the window) or earlier counts nothing;
// around 0, 2³¹ and 2³² alike.
func TestCurrent(t *testing.T) {
	for _, p := range []int64{0, 9, 10, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 32, 5<<32 + 3, math.MaxInt64} {
		for age := int64(-3); age <= 12; age++ {
			want := uint64(0)
			if age < Periods {
				want = 7
			}
			if got := Current(word(p-age, 7), p); got != want {
				t.Errorf("at period %d, a word of period %d: Current = %d, want %d", p, p-age, got, want)
			}
		}
		if got := Current(word(p-1<<31+1, 7), p); got != 0 {
			t.Errorf("at period %d, a word 2³¹−1 periods old: Current = %d, want 0", p, got)
		}
		if got := Current(word(p+1<<31-1, 7), p); got != 7 {
			t.Errorf("at period %d, a word 2³¹−1 periods ahead: Current = %d, want 7", p, got)
		}
	}
}

// TestExpire: moving from h to p clears a word of a period at most h and at
// most p−10 (just out of the window), and keeps one still in the window,
// one of a period after h and the zero word.
func TestExpire(t *testing.T) {
	for _, h := range []int64{0, 20, 1<<31 - 3, 1<<32 - 2, 3 << 32} {
		for _, p := range []int64{h + 1, h + 9, h + 10, h + 11, h + 1<<31} {
			for _, period := range []int64{h + 1, h, h - 1, p - 11, p - 10, p - 9, h - 1<<31 + 1} {
				for _, n := range []uint64{1, math.MaxUint32} {
					old := word(period, n)
					want := old
					if period <= h && period <= p-Periods {
						want = 0
					}
					var w atomic.Uint64
					w.Store(old)
					Expire(&w, h, p)
					if got := w.Load(); got != want {
						t.Errorf("moving from %d to %d, a word of period %d: %#x, want %#x", h, p, period, got, want)
					}
				}
			}
			var w atomic.Uint64
			Expire(&w, h, p)
			if got := w.Load(); got != 0 {
				t.Errorf("moving from %d to %d, the zero word: %#x", h, p, got)
			}
		}
	}
	// A word that counts nothing under a stamp is left as it is.
	var w atomic.Uint64
	w.Store(word(0, 0))
	Expire(&w, 0, 1<<20)
	w.Store(word(3, 0))
	Expire(&w, 20, 1<<20)
	if got := w.Load(); got != word(3, 0) {
		t.Errorf("a stamped word of count 0: %#x", got)
	}
}

// set is a user of the package: one word per period of the window.
type set struct {
	period Period
	words  [Periods]atomic.Uint64
}

func (s *set) at(p int64) int64 {
	return s.period.At(p, func(h int64) {
		for i := range s.words {
			Expire(&s.words[i], h, p)
		}
	})
}

func (s *set) bump(p int64) {
	q := s.at(p)
	Bump(&s.words[q%Periods], q)
}

func (s *set) count(p int64) (n uint64) {
	q := s.at(p)
	for i := range s.words {
		n += Current(s.words[i].Load(), q)
	}
	return n
}

// TestStampsWrap: a word is cleared as soon as its period leaves the
// window, however the period moves on; one kept would read as current
// again 2³² periods later, and ambiguous 2³¹ periods later. The period moves
// to 9, 10 and then ever almost doubles, past 2³² and beyond.
func TestStampsWrap(t *testing.T) {
	if got := Current(word(0, 1), 1<<32); got != 1 {
		t.Fatalf("a word of period 0 read at 2³²: Current = %d; want 1 (the stamp wrapped)", got)
	}
	periods := []int64{9, 10}
	for p := int64(10); p < 1<<40; {
		p = 2*p + 9
		periods = append(periods, p)
	}
	var s set
	s.bump(0)
	for _, p := range periods {
		want := uint64(0)
		if p < Periods {
			want = 1
		}
		if got := s.count(p); got != want {
			t.Fatalf("at period %d: count %d, want %d", p, got, want)
		}
	}
	// A jump of exactly 2³² periods, and one of 2³¹.
	for _, jump := range []int64{1 << 32, 1 << 31, 1<<31 + 1} {
		var s set
		s.bump(3)
		s.bump(3)
		if got := s.count(3 + jump); got != 0 {
			t.Errorf("a jump of %d periods: count %d, want 0", jump, got)
		}
		s.bump(3 + jump)
		if got := s.count(3 + jump); got != 1 {
			t.Errorf("a jump of %d periods, then a bump: count %d, want 1", jump, got)
		}
	}
}

// TestWindowEdges: a count made at period p counts at p to p+9 and not from
// p+10 on, whether or not the period stopped in between.
func TestWindowEdges(t *testing.T) {
	for _, start := range []int64{0, 1<<31 - 5, 1<<32 - 5} {
		for stop := int64(0); stop <= 10; stop++ {
			var s set
			s.at(start)
			s.bump(start)
			if stop > 0 && stop < 10 {
				if got := s.count(start + stop); got != 1 {
					t.Errorf("from %d, at +%d: count %d, want 1", start, stop, got)
				}
			}
			if got := s.count(start + 10); got != 0 {
				t.Errorf("from %d, via +%d, at +10: count %d, want 0", start, stop, got)
			}
			if got := s.words[start%Periods].Load(); got != 0 {
				t.Errorf("from %d, via +%d, at +10: word %#x not cleared", start, stop, got)
			}
		}
	}
}

// TestConcurrentBumps: concurrent Bumps of one word in one period all
// count; while the period moves, the window holds at most what was counted
// and at least what was counted at its period, and words of old periods
// last until the next move at most.
func TestConcurrentBumps(t *testing.T) {
	const goroutines, n = 4, 2000
	var w atomic.Uint64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range n {
				Bump(&w, 1<<32+5)
			}
		})
	}
	wg.Wait()
	if got, want := w.Load(), word(1<<32+5, goroutines*n); got != want {
		t.Errorf("%d concurrent Bumps: %#x, want %#x", goroutines*n, got, want)
	}

	// Half the goroutines move the period on by 13 every 100 Bumps, the
	// other half follow at half that pace (each Bump counts at the set's
	// period, the latest): the last 100 Bumps of each fast one count at the
	// last period, and no word is left of a period before the window.
	var s set
	const last = (n - 1) / 100 * 13
	for g := range goroutines {
		wg.Go(func() {
			for i := range n {
				p := int64(i / 100 * 13)
				if g%2 == 1 {
					p /= 2
				}
				s.bump(p)
			}
		})
	}
	wg.Wait()
	if got := s.count(last); got < goroutines/2*100 || got > goroutines*n {
		t.Errorf("at the last period: count %d, want between %d and %d", got, goroutines/2*100, goroutines*n)
	}
	// A Bump that read the period before a move may stamp its word after
	// the move cleared it; the next move clears it.
	s.at(last + 1)
	for i := range s.words {
		if v := s.words[i].Load(); v != 0 && (int64(v>>32) > last+1 || int64(v>>32) <= last+1-Periods) {
			t.Errorf("word %d of period %d left at %d", i, v>>32, last+1)
		}
	}
}

package retryshare

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

// manualClock is a clock that a test sets; safe for concurrent use.
type manualClock struct{ ns atomic.Int64 }

var manualEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func (c *manualClock) now() time.Time          { return manualEpoch.Add(time.Duration(c.ns.Load())) }
func (c *manualClock) set(d time.Duration)     { c.ns.Store(int64(d)) }
func (c *manualClock) setTime(t time.Time)     { c.ns.Store(int64(t.Sub(manualEpoch))) }
func (c *manualClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newShare(t *testing.T, cfg Config, c *manualClock) *Share {
	t.Helper()
	cfg.Now = c.now
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// retriesOver reports whether the window of route "" is over by its
// retries (what Over reported before Refuse): the window's mechanics are
// tested through it.
func (s *Share) retriesOver() bool {
	return s.overByRetries("")
}

// record records n requests of route "" from caller "c", retries of them
// retries.
func record(s *Share, n, retries int) {
	for i := range n {
		s.Record("", "c", i < retries)
	}
}

func TestNewRetryShareRejectsBadParameters(t *testing.T) {
	tests := []struct {
		cfg   Config
		param string
	}{
		{Config{Threshold: -0.1}, "Threshold"},
		{Config{Threshold: 1.0000001}, "Threshold"},
		{Config{Threshold: math.NaN()}, "Threshold"},
		{Config{Threshold: math.Inf(1)}, "Threshold"},
		{Config{Window: -time.Second}, "Window"},
		{Config{Window: 10*time.Millisecond - 1}, "Window"},
		{Config{MinRetries: -1}, "MinRetries"},
		{Config{Burst: -1}, "Burst"},
		{Config{Burst: 1_000_001}, "Burst"},
		{Config{MaxRoutes: -1}, "MaxRoutes"},
		{Config{MaxRoutes: 10001}, "MaxRoutes"},
		{Config{Callers: -1}, "Callers"},
		{Config{Callers: 1<<16 + 1}, "Callers"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		var pe *backoff.ParamError
		if !errors.As(err, &pe) || pe.Param != tt.param || !strings.Contains(err.Error(), tt.param) {
			t.Errorf("New(%+v) = %v, want a backoff.ParamError naming %s", tt.cfg, err, tt.param)
		}
	}
	_, err := New(Config{Window: time.Millisecond})
	if want := "backoff: invalid Window 1ms: must be at least 10ms"; err == nil || err.Error() != want {
		t.Errorf("short window: %v, want %q", err, want)
	}
	for _, cfg := range []Config{{}, {Threshold: 1, Window: 10 * time.Millisecond, MinRetries: 1, Burst: 1, MaxRoutes: 1, Callers: 1}, {Threshold: 5e-324, Window: math.MaxInt64, MinRetries: math.MaxInt, Burst: 1_000_000, MaxRoutes: 10000, Callers: 1 << 16}} {
		if _, err := New(cfg); err != nil {
			t.Errorf("New(%+v) = %v, want success", cfg, err)
		}
	}
}

// TestRetryShareDefaults: a zero config is over above 10 % retries, with at
// least 2 of them, over 10 s.
func TestRetryShareDefaults(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{}, c)
	if s.retriesOver() {
		t.Fatal("over with nothing recorded")
	}
	s.Record("", "c", true)
	if s.retriesOver() {
		t.Error("over with 1 retry of 1 request: want MinRetries 2 by default")
	}
	record(s, 19, 1) // 2 retries of 20 requests: exactly 10 %
	if s.retriesOver() {
		t.Error("over at exactly 10 % retries")
	}
	s.Record("", "c", true) // 3 of 21
	if !s.retriesOver() {
		t.Error("not over at 3 retries of 21 requests")
	}
	c.set(10*time.Second - 1)
	if !s.retriesOver() {
		t.Error("not over 1 ns before the window's end")
	}
	c.set(10 * time.Second)
	if s.retriesOver() {
		t.Error("over a 10 s window after the requests")
	}
}

// TestRetryShareThreshold: over means more than Threshold of the requests,
// exactly, for shares that are whole numbers of hundredths.
func TestRetryShareThreshold(t *testing.T) {
	c := new(manualClock)
	for k := 1; k <= 100; k++ {
		for _, n := range []int{100, 300, 1000, 2300} {
			s := newShare(t, Config{Threshold: float64(k) / 100, MinRetries: 1}, c)
			r := k * n / 100
			record(s, n, r)
			if s.retriesOver() {
				t.Errorf("Threshold %d %%: over at %d retries of %d requests", k, r, n)
			}
			if k == 100 {
				continue // a share above 1 cannot be recorded
			}
			s.Record("", "c", true)
			if !s.retriesOver() {
				t.Errorf("Threshold %d %%: not over at %d retries of %d requests", k, r+1, n+1)
			}
		}
	}
}

func TestRetryShareMinRetries(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{MinRetries: 5}, c)
	record(s, 4, 4)
	if s.retriesOver() {
		t.Error("over with 4 retries, MinRetries 5")
	}
	s.Record("", "c", true)
	if !s.retriesOver() {
		t.Error("not over with 5 retries of 5 requests, MinRetries 5")
	}
}

// TestRetryShareWindowEdges: a request recorded at t counts until at least
// t + 9/10 of Window and not from t + Window on, wherever t falls within
// its bucket; the buckets start at New.
func TestRetryShareWindowEdges(t *testing.T) {
	const window = 10 * time.Second
	const bucket = window / 10
	for _, at := range []time.Duration{0, 1, bucket / 2, bucket - 1, bucket, 7*bucket + 123, 1000*bucket - 1} {
		c := new(manualClock)
		c.set(-time.Hour) // the buckets start where New reads the clock
		s := newShare(t, Config{Window: window, MinRetries: 1}, c)
		c.set(-time.Hour + at)
		s.Record("", "c", true)
		start := -time.Hour + at - at%bucket // the bucket's start
		for _, tt := range []struct {
			t    time.Duration
			over bool
		}{
			{-time.Hour + at, true},
			{-time.Hour + at + window*9/10, true},
			{start + window - 1, true},
			{start + window, false},
			{-time.Hour + at + window, false},
		} {
			c.set(tt.t)
			if got := s.retriesOver(); got != tt.over {
				t.Errorf("recorded at %v: Over at %v = %v, want %v", at, tt.t+time.Hour, got, tt.over)
			}
		}
	}
}

// TestRetryShareOddWindow: a Window that is not a multiple of 10 ns has
// buckets rounded down: 9 of them after the end of a bucket, and not a
// Window after its start.
func TestRetryShareOddWindow(t *testing.T) {
	const window = 10*time.Second + 7
	const bucket = time.Second // window/10, rounded down
	c := new(manualClock)
	s := newShare(t, Config{Window: window, MinRetries: 1}, c)
	c.set(bucket - 1) // the end of the first bucket
	s.Record("", "c", true)
	c.set(bucket - 1 + 9*bucket)
	if !s.retriesOver() {
		t.Error("not over 9 buckets after the retry")
	}
	c.set(10 * bucket)
	if s.retriesOver() {
		t.Error("over 10 buckets after the first bucket's start")
	}
	c.set(0)
	s = newShare(t, Config{Window: window, MinRetries: 1}, c)
	s.Record("", "c", true)
	c.set(window - 7) // ten buckets: already out
	if s.retriesOver() {
		t.Error("over ten buckets after the retry, 7 ns short of Window")
	}
}

// TestRetryShareSlides: the window slides bucket by bucket; the oldest
// bucket leaves it whole, the others stay.
func TestRetryShareSlides(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{Window: time.Second, MinRetries: 1, Threshold: 0.3}, c)
	record(s, 10, 10) // bucket 0: 10 retries
	for i := 1; i < 10; i++ {
		c.set(time.Duration(i) * 100 * time.Millisecond)
		record(s, 2, 0) // buckets 1 to 9: 18 first attempts
	}
	if !s.retriesOver() {
		t.Error("not over at 10 retries of 28 requests, Threshold 0.3")
	}
	c.set(time.Second)
	s.Record("", "c", true) // bucket 10 replaces bucket 0: 1 retry of 19
	if s.retriesOver() {
		t.Error("over at 1 retry of 19 requests: bucket 0 still counted")
	}
	record(s, 6, 6) // 7 of 25
	if s.retriesOver() {
		t.Error("over at 7 retries of 25 requests, Threshold 0.3")
	}
	s.Record("", "c", true) // 8 of 26
	if !s.retriesOver() {
		t.Error("not over at 8 retries of 26 requests, Threshold 0.3")
	}
}

// TestRetryShareClockBackwards: an earlier reading counts as the latest, so
// the window stays where it was until the clock catches up.
func TestRetryShareClockBackwards(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{MinRetries: 1}, c)
	c.set(25 * time.Second)
	s.Record("", "c", true) // bucket 25 s
	c.set(-time.Hour)
	record(s, 9, 0)      // counted in the latest bucket, 25 s
	if s.retriesOver() { // 1 of 10: not more than 10 %
		t.Error("over at 1 retry of 10")
	}
	s.Record("", "c", true)
	if !s.retriesOver() {
		t.Error("not over at 2 retries of 11, the clock behind")
	}
	c.set(35*time.Second - 1)
	if !s.retriesOver() {
		t.Error("not over at 35 s - 1 ns: the requests made while the clock was behind were lost")
	}
	c.set(35 * time.Second)
	if s.retriesOver() {
		t.Error("over at 35 s, a window after the latest reading")
	}
}

// TestRetryShareClockFarAhead: a reading far ahead moves the window there;
// what was recorded before is gone, and the window stays there while the
// clock is behind it.
func TestRetryShareClockFarAhead(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{MinRetries: 1}, c)
	record(s, 10, 10)
	c.setTime(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))
	record(s, 10, 0)
	if s.retriesOver() {
		t.Error("over in the year 9999 with no retry recorded there")
	}
	c.set(time.Second) // back to the present
	s.Record("", "c", true)
	s.Record("", "c", true) // 2 of 12, in the window of the year 9999
	if !s.retriesOver() {
		t.Error("not over at 2 retries of 12, the window in the year 9999")
	}
	c.ns.Store(math.MaxInt64) // time.Time's own limit: Sub saturates
	if !s.retriesOver() {
		t.Error("not over at the largest reading, a window after 9999")
	}
	s.Record("", "c", true)
	if !s.retriesOver() {
		t.Error("not over after a retry at the largest reading")
	}
}

// TestRetryShareStampsWrap: a bucket's period is kept modulo 2³² (and read
// modulo 2³¹); a window 2³² or 2³¹+5 buckets later, or jumps of about 2³¹
// buckets, must not read old counts as current.
func TestRetryShareStampsWrap(t *testing.T) {
	const bucket = time.Millisecond
	for _, jump := range []int64{1 << 32, 1<<32 + 10, 1<<31 + 5, 1<<31 - 1, 5 << 32} {
		c := new(manualClock)
		s := newShare(t, Config{Window: 10 * bucket, MinRetries: 1}, c)
		at := time.Duration(0)
		for range 3 { // three jumps, each with retries before it
			record(s, 10, 10)
			at += time.Duration(jump) * bucket
			c.set(at)
			record(s, 10, 1) // 1 of 10, or more with old counts
			if s.retriesOver() {
				t.Errorf("jump of %d buckets to %v: over, old retries read as current", jump, at)
			}
		}
		// Later in the same window, nothing was lost.
		c.set(at + 9*bucket)
		s.Record("", "c", true)
		if !s.retriesOver() {
			t.Errorf("jump of %d buckets: 2 retries of 11 not over", jump)
		}
		c.set(at + 10*bucket)
		if !s.retriesOver() {
			t.Errorf("jump of %d buckets: the last retry lost a bucket later", jump)
		}
		c.set(at + 18*bucket)
		if !s.retriesOver() {
			t.Errorf("jump of %d buckets: the last retry lost 9 buckets later", jump)
		}
		c.set(at + 19*bucket)
		if s.retriesOver() {
			t.Errorf("jump of %d buckets: over 10 buckets after the last retry", jump)
		}
	}
}

// TestRetryShareUnclearedWord: a word that a concurrent observe has yet to
// clear (stored here by hand, as no schedule can be forced) counts only while
// its period is in the window: at period 20, a word of period 10 counts
// nothing and one of period 11 counts.
func TestRetryShareUnclearedWord(t *testing.T) {
	const bucket = time.Millisecond
	c := new(manualClock)
	s := newShare(t, Config{Window: 10 * bucket, MinRetries: 1}, c)
	c.set(20 * bucket)
	if s.retriesOver() {
		t.Fatal("over with nothing recorded")
	}
	s.route("").buckets[0].retries.Store(10<<32 | 5)
	if s.retriesOver() {
		t.Error("5 retries of period 10 counted at period 20, 10 buckets later")
	}
	s.route("").buckets[1].retries.Store(11<<32 | 5)
	if !s.retriesOver() {
		t.Error("5 retries of period 11 not counted at period 20, 9 buckets later")
	}
}

// TestRetryShareExpiresBeforeStampsWrap: a word is cleared as soon as its
// period leaves the window, however the period moves on; one kept longer
// would, 2³¹ periods later, read as current again. The period moves to 9,
// 10 and then ever almost doubles (each move shorter than twice the last
// period plus the window), up to 19·2²⁷−9, past 2³¹.
func TestRetryShareExpiresBeforeStampsWrap(t *testing.T) {
	const bucket = time.Millisecond
	c := new(manualClock)
	s := newShare(t, Config{Window: 10 * bucket, MinRetries: 1}, c)
	record(s, 5, 5)
	periods := []int64{9, 10}
	for p := int64(10); p < 1<<31; {
		p = 2*p + 9
		periods = append(periods, p)
	}
	for _, p := range periods {
		c.set(time.Duration(p) * bucket)
		if over := s.retriesOver(); over != (p < 10) {
			t.Fatalf("at period %d: over %v, want %v", p, over, p < 10)
		}
	}
}

// TestRetryShareSaturates: a bucket counts at most 2³²−1; the count does
// not run into the word's period.
func TestRetryShareSaturates(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{MinRetries: 1, Threshold: 1.0 / 3}, c)
	s.Record("", "c", false)
	s.route("").buckets[0].requests.Add(math.MaxUint32 - 2)
	s.Record("", "c", false)
	s.Record("", "c", false) // past 2³²−1
	if got := s.route("").buckets[0].requests.Load(); got != math.MaxUint32 {
		t.Fatalf("requests word %#x, want %#x", got, uint64(math.MaxUint32))
	}
	s.route("").buckets[0].retries.Store(math.MaxUint32 / 2)
	if !s.retriesOver() {
		t.Error("not over at half the requests retried, Threshold 1/3")
	}
}

// TestRetryShareConcurrent: with the clock still, concurrent Records are
// all counted, exactly; with the clock moving under them, nothing is
// counted that was not recorded.
func TestRetryShareConcurrent(t *testing.T) {
	const goroutines, each = 8, 1000 // each records 1000 requests, 100 retries
	c := new(manualClock)
	s := newShare(t, Config{MinRetries: 1}, c)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			record(s, each, each/10)
			s.retriesOver()
		})
	}
	wg.Wait()
	if s.retriesOver() { // exactly 10 %
		t.Error("over at exactly 10 % of the concurrent requests")
	}
	s.Record("", "c", true)
	if !s.retriesOver() {
		t.Error("not over one retry past 10 %: a concurrent request was lost")
	}

	// The clock moves a bucket every 100 calls; every goroutine records
	// only retries of 1 in 10, so no window may be over.
	m := new(manualClock)
	var ticks atomic.Int64
	moving := func() time.Time {
		if ticks.Add(1)%100 == 0 {
			m.advance(time.Second)
		}
		return m.now()
	}
	s, err := New(Config{Now: moving, MinRetries: 1, Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	var over atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for range each {
				record(s, 10, 1)
				if s.retriesOver() {
					over.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := over.Load(); n != 0 {
		t.Errorf("over %d times at 1 retry in 10, Threshold 0.5", n)
	}
}

func TestRetryShareAllocs(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{}, c)
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		i++
		c.set(time.Duration(i) * 100 * time.Millisecond) // a new bucket every time
		s.Record("", "c", i%3 == 0)
		s.retriesOver()
		s.Refuse("", "c")
		s.Record("/users/{id}", "192.0.2.1:4321", true)
		s.Refuse("/users/{id}", "192.0.2.1:4321")
		s.Admit("/users/{id}", "192.0.2.1:4321")
		s.Admit("/never", "c")
	}); n != 0 {
		t.Errorf("Record, Refuse and Admit of known routes and callers allocate %v times", n)
	}
	// Past MaxRoutes, a new route is counted with the others, without a
	// window (or an allocation) of its own.
	s = newShare(t, Config{MaxRoutes: 1}, c)
	s.Record("a", "c", false)
	if n := testing.AllocsPerRun(1000, func() {
		i++
		route := routeNames[i%len(routeNames)]
		s.Record(route, "c", true)
		s.Refuse(route, "c")
		s.Admit(route, "c")
	}); n != 0 {
		t.Errorf("Record, Refuse and Admit of routes past MaxRoutes allocate %v times", n)
	}
}

var routeNames = []string{"b", "c", "d", "e"}

// TestRetryShareDefaultClock: without Now, the clock is time.Now (here the
// bubble's).
func TestRetryShareDefaultClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := backoff.Must(New(Config{MinRetries: 1}))
		s.Record("", "c", true)
		time.Sleep(10*time.Second - 1)
		if !s.retriesOver() {
			t.Error("not over 1 ns before the window's end")
		}
		time.Sleep(time.Nanosecond)
		if s.retriesOver() {
			t.Error("over a window after the retry")
		}
	})
}

func BenchmarkRetryShareRecord(b *testing.B) {
	s := backoff.Must(New(Config{}))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Record("/users/{id}", "192.0.2.1:4321", i%8 == 0)
	}
}

func BenchmarkRetryShareRefuse(b *testing.B) {
	s := backoff.Must(New(Config{}))
	for i := range 1000 {
		s.Record("/users/{id}", "192.0.2.1:4321", i%8 == 0)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Refuse("/users/{id}", "192.0.2.1:4321")
	}
}

func BenchmarkRetryShareRecordParallel(b *testing.B) {
	s := backoff.Must(New(Config{}))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			s.Record("/users/{id}", callerNames[i%len(callerNames)], i%8 == 0)
		}
	})
}

var callerNames = []string{"192.0.2.1:4321", "192.0.2.2:4321", "192.0.2.3:4321", "192.0.2.4:4321"}

// FuzzRetryShare checks Share against a model that keeps every request
// and failing answer of one route and one caller, and the route's
// allowance: its time is the latest reading so far, and a window counts
// what was recorded in its last ten buckets. Each step of the input moves
// the clock (forward or back, by up to about 3 windows), records a request
// or a retry, asks whether the window is over by its retries, or asks
// Refuse (whose caller's slots count what the route counts, so that it
// refuses when the window is over by its retries, significantly more than
// Threshold of its requests, or its answers are significant and its
// allowance is under 1; never at Threshold 1); significant builds the
// binomial tail trial by trial.
func FuzzRetryShare(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 3, 200, 1, 1, 2, 9, 255, 2}, uint8(1), uint8(10))
	f.Add([]byte{1, 1, 1, 1, 2, 17, 0, 3, 2, 50, 0, 2}, uint8(3), uint8(25))
	f.Add([]byte{0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 3, 150, 4, 0, 1, 0, 4, 0}, uint8(1), uint8(30))
	f.Add([]byte{0, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 0, 0, 4, 0, 3, 120, 4, 0}, uint8(0), uint8(9))
	f.Fuzz(func(t *testing.T, steps []byte, minRetries, thresholdPct uint8) {
		const window = 10 * time.Second
		const bucket = window / 10
		cfg := Config{Window: window, MinRetries: int(minRetries%5) + 1, Burst: int(minRetries/5%3) + 1, Threshold: float64(thresholdPct%100+1) / 100}
		c := new(manualClock)
		s := newShare(t, cfg, c)
		type rec struct {
			at          time.Duration
			retry, fail bool
		}
		var recs []rec
		var latest time.Duration // the share's time: the latest reading
		observe := func() {
			latest = max(latest, time.Duration(c.ns.Load()))
		}
		counts := func() (n, r, f int) {
			for _, x := range recs {
				if x.at/bucket > latest/bucket-10 {
					switch {
					case x.fail:
						f++
					case x.retry:
						n, r = n+1, r+1
					default:
						n++
					}
				}
			}
			return n, r, f
		}
		// The allowance in billionths of an invitation.
		full := int64(cfg.Burst) * 1e9
		allowance, gain := full, int64(math.Round(cfg.Threshold*1e9))
		above := func(k, n int) bool { return float64(k)/float64(max(n, k)) > cfg.Threshold }
		for i := 0; i+1 < len(steps); i += 2 {
			op, arg := steps[i]%5, steps[i+1]
			switch op {
			case 0, 1:
				s.Record("", "c", op == 1)
				observe()
				recs = append(recs, rec{at: latest, retry: op == 1})
				allowance = min(allowance+gain, full)
			case 2:
				observe()
				n, r, _ := counts()
				want := r >= cfg.MinRetries && above(r, n)
				if got := s.retriesOver(); got != want {
					t.Fatalf("step %d at %v (latest %v): over by retries = %v, want %v (%d retries of %d)", i/2, c.now().Sub(manualEpoch), latest, got, want, r, n)
				}
			case 3: // move the clock by arg-100 tenths of a bucket, plus a few ns
				c.advance(time.Duration(int(arg)-100)*bucket/10 + time.Duration(arg%7))
			case 4:
				observe()
				n, r, f := counts()
				// The caller's slots count what the route counts.
				byRetries := r >= cfg.MinRetries && above(r, n) && significant(r, n, cfg.Threshold)
				// At Threshold 1 nothing is refused ("a Share whose Threshold is 1 never refuses").
				want := cfg.Threshold < 1 && (byRetries || significant(f+1, n, cfg.Threshold) && allowance < 1e9)
				if got := s.Refuse("", "c"); got != want {
					t.Fatalf("step %d at %v (latest %v): Refuse = %v, want %v (%d retries, %d failing answers, %d requests, allowance %d)", i/2, c.now().Sub(manualEpoch), latest, got, want, r, f, n, allowance)
				}
				recs = append(recs, rec{at: latest, fail: true})
				if !want {
					allowance = max(allowance-1e9, 0)
				}
			}
		}
	})
}

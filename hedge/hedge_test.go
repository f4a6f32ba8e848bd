package hedge

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
)

// manual is a clock that a test sets.
type manual struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manual) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manual) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newManual() *manual              { return &manual{t: time.Unix(1e9, 0)} }
func must(t *testing.T, cfg Config) *Delay {
	t.Helper()
	d, err := NewDelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewDelayValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		param string
	}{
		{Config{MaxExtraLoad: -0.1}, "MaxExtraLoad"},
		{Config{MaxExtraLoad: 0.51}, "MaxExtraLoad"},
		{Config{MaxExtraLoad: math.NaN()}, "MaxExtraLoad"},
		{Config{MaxExtraLoad: math.Inf(1)}, "MaxExtraLoad"},
		{Config{Window: -time.Second}, "Window"},
		{Config{Window: 10*time.Millisecond - 1}, "Window"},
		{Config{MinSamples: -1}, "MinSamples"},
	} {
		_, err := NewDelay(tc.cfg)
		var pe *backoff.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param {
			t.Errorf("NewDelay(%+v) = %v; want a *backoff.ParamError naming %s", tc.cfg, err, tc.param)
		}
	}
	for _, cfg := range []Config{{}, {MaxExtraLoad: 0.5, Window: 10 * time.Millisecond, MinSamples: 1}, {MaxExtraLoad: 1e-9, MinSamples: math.MaxInt32}} {
		if _, err := NewDelay(cfg); err != nil {
			t.Errorf("NewDelay(%+v): %v", cfg, err)
		}
	}
}

func TestNilDelay(t *testing.T) {
	var d *Delay
	d.Observe(time.Second)
	if got, ok := d.Hedge(); got != 0 || ok {
		t.Errorf("nil Hedge() = %v, %v; want 0, false", got, ok)
	}
}

func TestBuckets(t *testing.T) {
	if numBuckets != 288 || bucket(maxLatency) != numBuckets-1 || upper(numBuckets-1) != maxLatency {
		t.Fatalf("numBuckets %d, bucket(max) %d, upper(last) %d", numBuckets, bucket(maxLatency), upper(numBuckets-1))
	}
	// Every bucket's range follows the previous one's, is at most 1/8 of its
	// lower end wide, and bucket maps its ends back to it.
	lo := int64(0)
	for b := range numBuckets {
		hi := upper(b)
		if hi < lo || bucket(lo) != b || bucket(hi) != b || (lo >= sub && (hi-lo+1)*8 > lo) {
			t.Fatalf("bucket %d: [%d, %d], bucket(lo) %d, bucket(hi) %d", b, lo, hi, bucket(lo), bucket(hi))
		}
		if lo < sub && hi != lo {
			t.Fatalf("bucket %d below %d holds [%d, %d]; want one value", b, sub, lo, hi)
		}
		lo = hi + 1
	}
	if bucket(-5) != 0 || bucket(math.MaxInt64) != numBuckets-1 {
		t.Errorf("bucket(-5) = %d, bucket(MaxInt64) = %d", bucket(-5), bucket(math.MaxInt64))
	}
}

func TestHedgeEdges(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		cfg     Config
		samples []time.Duration
		want    time.Duration
		ok      bool
	}{
		{"no samples", Config{MinSamples: 1}, nil, 0, false},
		{"fewer than MinSamples", Config{MinSamples: 3}, []time.Duration{ms, ms}, 0, false},
		{"exactly MinSamples", Config{MinSamples: 2}, []time.Duration{ms, ms}, time.Duration(upper(bucket(int64(ms)))), true},
		{"all equal: their bucket's top", Config{MinSamples: 1}, slices.Repeat([]time.Duration{3 * ms}, 50), time.Duration(upper(bucket(int64(3 * ms)))), true},
		{"all zero", Config{MinSamples: 1}, []time.Duration{0, 0, 0}, 0, true},
		{"negative counts as 0", Config{MinSamples: 1}, []time.Duration{-time.Second}, 0, true},
		{"exact below 8 ns", Config{MinSamples: 1, MaxExtraLoad: 0.5}, []time.Duration{1, 2, 3, 7}, 2, true},
		// A bucket's lower end, 1<<20 ns, and the value just below it, in the
		// bucket before: the delay is the top of the bucket holding the rank.
		{"rank at a bucket's lower end", Config{MinSamples: 1, MaxExtraLoad: 0.5}, []time.Duration{1<<20 - 1, 1 << 20}, 1<<20 - 1, true},
		{"rank past a boundary", Config{MinSamples: 1, MaxExtraLoad: 0.25}, []time.Duration{1<<20 - 1, 1 << 20, 1 << 20, 1 << 20}, 1<<20 + 1<<17 - 1, true},
		// 100 samples, p95: the 95th smallest; 5 above it.
		{"p95 of 1..100 ms", Config{}, ramp(100, ms), time.Duration(upper(bucket(int64(95 * ms)))), true},
		{"p97 of 1..100 ms", Config{MaxExtraLoad: 0.03}, ramp(100, ms), time.Duration(upper(bucket(int64(97 * ms)))), true},
		{"longest counts as 2³⁸−1 ns", Config{MinSamples: 1}, []time.Duration{time.Hour}, maxLatency, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newManual()
			tc.cfg.Now = c.Now
			d := must(t, tc.cfg)
			for _, s := range tc.samples {
				d.Observe(s)
			}
			got, ok := d.Hedge()
			if got != tc.want || ok != tc.ok {
				t.Errorf("Hedge() = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func ramp(n int, step time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = time.Duration(i+1) * step
	}
	return s
}

// TestWindowAges pins the window on synctest's clock: a latency counts
// until 9 tenths of Window after it and not from Window after it on.
func TestWindowAges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := must(t, Config{Window: time.Second, MinSamples: 1})
		d.Observe(50 * time.Millisecond)
		time.Sleep(500 * time.Millisecond)
		d.Observe(time.Millisecond)
		if got, _ := d.Hedge(); got != time.Duration(upper(bucket(int64(50*time.Millisecond)))) {
			t.Fatalf("at 0.5 s Hedge() = %v; want the 50 ms sample's bucket", got)
		}
		time.Sleep(400 * time.Millisecond) // 0.9 s: the first still counts
		if got, _ := d.Hedge(); got != time.Duration(upper(bucket(int64(50*time.Millisecond)))) {
			t.Fatalf("at 0.9 s Hedge() = %v; want the 50 ms sample still counted", got)
		}
		time.Sleep(100 * time.Millisecond) // 1 s: it is out
		if got, ok := d.Hedge(); got != time.Duration(upper(bucket(int64(time.Millisecond)))) || !ok {
			t.Fatalf("at 1 s Hedge() = %v, %v; want only the 1 ms sample", got, ok)
		}
		time.Sleep(500 * time.Millisecond) // 1.5 s: both out
		if got, ok := d.Hedge(); ok {
			t.Fatalf("at 1.5 s Hedge() = %v, true; want no samples", got)
		}
		// Unused for 2³² periods and more: stale stamps do not come back.
		time.Sleep(time.Second)
		d.Observe(time.Millisecond)
		time.Sleep(time.Duration(1<<32+3) * 100 * time.Millisecond)
		if got, ok := d.Hedge(); ok {
			t.Fatalf("after 2³² periods Hedge() = %v, true; want no samples", got)
		}
	})
}

// TestHedgeStaleness pins how stale Hedge's delay may be, on synctest's
// clock: a latency observed after the first Hedge of a time bucket that
// gave a delay does not count until the next time bucket starts, and then
// does at once; one observed before it counts; false is never stale.
func TestHedgeStaleness(t *testing.T) {
	top := func(v time.Duration) time.Duration { return time.Duration(upper(bucket(int64(v)))) }
	synctest.Test(t, func(t *testing.T) {
		// Window 1 s: time buckets of 100 ms, from 0.
		d := must(t, Config{Window: time.Second, MinSamples: 2, MaxExtraLoad: 0.5})
		d.Observe(time.Millisecond)
		if got, ok := d.Hedge(); ok {
			t.Fatalf("1 sample: Hedge() = %v, true; want false", got)
		}
		d.Observe(time.Millisecond) // the window reaches MinSamples: not stale
		if got, ok := d.Hedge(); got != top(time.Millisecond) || !ok {
			t.Fatalf("2 samples: Hedge() = %v, %v; want %v, true", got, ok, top(time.Millisecond))
		}
		for range 10 {
			d.Observe(50 * time.Millisecond)
		}
		if got, ok := d.Hedge(); got != top(time.Millisecond) || !ok {
			t.Fatalf("same time bucket: Hedge() = %v, %v; want the cached %v", got, ok, top(time.Millisecond))
		}
		time.Sleep(100*time.Millisecond - 1) // the bucket's last nanosecond
		if got, _ := d.Hedge(); got != top(time.Millisecond) {
			t.Fatalf("at 100 ms − 1 ns Hedge() = %v; want the cached %v", got, top(time.Millisecond))
		}
		time.Sleep(time.Nanosecond) // 100 ms: the next time bucket
		if got, ok := d.Hedge(); got != top(50*time.Millisecond) || !ok {
			t.Fatalf("at 100 ms Hedge() = %v, %v; want %v", got, ok, top(50*time.Millisecond))
		}
		// Observed in a time bucket before its first Hedge: counted.
		time.Sleep(150 * time.Millisecond) // 250 ms
		for range 20 {
			d.Observe(3 * time.Second)
		}
		if got, _ := d.Hedge(); got != top(3*time.Second) {
			t.Fatalf("at 250 ms Hedge() = %v; want %v", got, top(3*time.Second))
		}
		// Ageing is not stale: at 1 s the samples of time bucket 0 are out,
		// at 1.2 s those of 200-300 ms too; false at once.
		time.Sleep(950 * time.Millisecond) // 1.2 s
		if got, ok := d.Hedge(); ok {
			t.Fatalf("at 1.2 s Hedge() = %v, true; want none", got)
		}
	})
}

// TestConcurrentWholeAnswers runs Observe and Hedge from several goroutines
// (for -race, and GOARCH=386) while the clock crosses time buckets and the
// window's delay changes: every answer is one whole computed delay, the top
// of one observed latency's bucket.
func TestConcurrentWholeAnswers(t *testing.T) {
	c := newManual()
	d := must(t, Config{MinSamples: 1, MaxExtraLoad: 0.5, Window: 10 * time.Millisecond, Now: c.Now})
	lat := []time.Duration{time.Millisecond, 3 * time.Second}
	want := []time.Duration{time.Duration(upper(bucket(int64(lat[0])))), time.Duration(upper(bucket(int64(lat[1]))))}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				d.Observe(lat[(g+i/100)%2])
				c.Add(time.Microsecond)
				if got, ok := d.Hedge(); ok && !slices.Contains(want, got) {
					t.Errorf("Hedge() = %v; want one of %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestClockBackwards: a reading before the latest one counts in the
// latest period; nothing ages faster or comes back.
func TestClockBackwards(t *testing.T) {
	c := newManual()
	d := must(t, Config{Window: time.Second, MinSamples: 1, Now: c.Now})
	c.Add(800 * time.Millisecond)
	d.Observe(40 * time.Millisecond)
	c.Add(-time.Hour) // back, before NewDelay
	d.Observe(time.Millisecond)
	if got, _ := d.Hedge(); got != time.Duration(upper(bucket(int64(40*time.Millisecond)))) {
		t.Fatalf("Hedge() = %v; want both samples counted", got)
	}
	c.Add(time.Hour + 900*time.Millisecond) // 1.7 s: both (counted at 0.8 s) still in
	if _, ok := d.Hedge(); !ok {
		t.Fatal("at 1.7 s: samples gone")
	}
	c.Add(200 * time.Millisecond) // 1.9 s: both out
	if got, ok := d.Hedge(); ok {
		t.Fatalf("at 1.9 s Hedge() = %v, true; want none", got)
	}
}

func TestObserveAllocs(t *testing.T) {
	d := must(t, Config{})
	if n := testing.AllocsPerRun(1000, func() { d.Observe(3 * time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { d.Hedge() }); n != 0 {
		t.Errorf("Hedge allocates %v times", n)
	}
}

// TestConcurrent runs Observe and Hedge from several goroutines (for -race)
// while the clock moves; every sample is one value, so Hedge can give only
// its bucket's top.
func TestConcurrent(t *testing.T) {
	c := newManual()
	d := must(t, Config{MinSamples: 1, Window: 10 * time.Millisecond, Now: c.Now})
	want := time.Duration(upper(bucket(int64(time.Millisecond))))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				d.Observe(time.Millisecond)
				c.Add(time.Microsecond)
				if got, ok := d.Hedge(); ok && got != want {
					t.Errorf("Hedge() = %v; want %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzQuantile checks Hedge against a sorted slice of the same latencies:
// the delay d is at least the exact quantile x and at most x + x/8, and at
// most ⌊MaxExtraLoad·n⌋ latencies exceed it.
func FuzzQuantile(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(5))
	f.Add([]byte{0, 0, 0, 255, 255, 255, 128}, uint8(50))
	f.Add([]byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, pct uint8) {
		extra := float64(pct%50+1) / 100
		d := must(t, Config{MaxExtraLoad: extra, MinSamples: 1, Now: newManual().Now})
		var model []int64
		for i := 0; i+1 < len(data); i += 2 {
			// Spread over every size: a power of two times a mantissa.
			v := int64(data[i+1]) << (data[i] % 40)
			d.Observe(time.Duration(v))
			model = append(model, min(v, maxLatency))
		}
		got, ok := d.Hedge()
		if len(model) == 0 {
			if ok {
				t.Fatalf("Hedge() = %v, true with no samples", got)
			}
			return
		}
		slices.Sort(model)
		n := len(model)
		k := n - int(extra*float64(n))
		x := model[k-1]
		if !ok || int64(got) < x || int64(got) > x+x/8 {
			t.Fatalf("Hedge() = %v, %v; exact quantile %d ns (k %d of %d): want in [x, x+x/8]", int64(got), ok, x, k, n)
		}
		over := 0
		for _, v := range model {
			if v > int64(got) {
				over++
			}
		}
		if over > int(extra*float64(n)) {
			t.Fatalf("%d of %d latencies exceed %v; want at most %v", over, n, got, int(extra*float64(n)))
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	d, _ := NewDelay(Config{})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Observe(time.Duration(i&1023) * 10 * time.Microsecond)
	}
}

func BenchmarkObserveParallel(b *testing.B) {
	d, _ := NewDelay(Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			d.Observe(time.Duration(i&1023) * 10 * time.Microsecond)
		}
	})
}

// BenchmarkHedgeBelowMinSamples is Hedge while the window holds fewer
// than MinSamples latencies: every call computes.
func BenchmarkHedgeBelowMinSamples(b *testing.B) {
	d, _ := NewDelay(Config{})
	for i := range 99 {
		d.Observe(time.Duration(i) * time.Microsecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		d.Hedge()
	}
}

func BenchmarkHedge(b *testing.B) {
	d, _ := NewDelay(Config{})
	for i := range 10000 {
		d.Observe(time.Duration(i) * time.Microsecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		d.Hedge()
	}
}

// TestCacheKeepsFirstOfPeriod: of concurrent first Hedges of a time bucket,
// which each compute and store (no schedule can be forced, so the word a
// concurrent one stored first is set here by hand), the first word stored
// for a period is kept, and so is a later period's; an earlier period's
// is replaced.
func TestCacheKeepsFirstOfPeriod(t *testing.T) {
	word := func(q int64, b int) uint64 { return uint64(q+1)<<cacheShift | uint64(b) }
	for _, tc := range []struct {
		name   string
		old, c uint64
		want   uint64
	}{
		{"empty", 0, word(5, 7), word(5, 7)},
		{"same period: the first kept", word(5, 3), word(5, 7), word(5, 3)},
		{"later period kept", word(6, 3), word(5, 7), word(6, 3)},
		{"earlier period replaced", word(4, 3), word(5, 7), word(5, 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := must(t, Config{Now: newManual().Now})
			d.cached.Store(tc.old)
			d.cache(tc.c)
			if got := d.cached.Load(); got != tc.want {
				t.Errorf("cached %#x, cache(%#x): %#x; want %#x", tc.old, tc.c, got, tc.want)
			}
		})
	}
}

// TestUnclearedWordCountsInWindowOnly: a word that a concurrent Observe
// stamped after the move that cleared its time bucket (stored here by hand,
// as no schedule can be forced) counts only while its period is in the
// window: at period 20, one of period 10 counts nothing, one of period 11
// or later (even ahead of the counts', by an Observe that moved them on
// meanwhile) counts.
func TestUnclearedWordCountsInWindowOnly(t *testing.T) {
	const width = time.Millisecond // Window 10 ms
	for _, tc := range []struct {
		period int64
		ok     bool
	}{
		{10, false},
		{11, true},
		{20, true},
		{21, true},
	} {
		c := newManual()
		d := must(t, Config{Window: 10 * width, MinSamples: 1, Now: c.Now})
		c.Add(20 * width)
		if got, ok := d.Hedge(); ok {
			t.Fatalf("nothing observed: Hedge() = %v, true", got)
		}
		b := bucket(int64(time.Millisecond))
		d.counts[b][tc.period%slots].Store(uint64(tc.period)<<32 | 5)
		want := time.Duration(0)
		if tc.ok {
			want = time.Duration(upper(b))
		}
		if got, ok := d.Hedge(); got != want || ok != tc.ok {
			t.Errorf("at period 20, 5 latencies of period %d: Hedge() = %v, %v; want %v, %v", tc.period, got, ok, want, tc.ok)
		}
	}
}

// TestWindowExpiresBeforeStampsWrap: a word is cleared as soon as its
// period leaves the window, however the period moves on; one kept longer
// would, 2³¹ periods later, read as current again. The period moves to 9,
// 10 and then ever almost doubles (each move shorter than twice the last
// period plus the window), up to 19·2²⁷−9, past 2³¹.
func TestWindowExpiresBeforeStampsWrap(t *testing.T) {
	const width = time.Millisecond // Window 10 ms
	periods := []int64{9, 10}
	for p := int64(10); p < 1<<31; {
		p = 2*p + 9
		periods = append(periods, p)
	}
	c := newManual()
	start := c.Now()
	d := must(t, Config{Window: 10 * width, MinSamples: 1, Now: c.Now})
	d.Observe(time.Millisecond) // period 0
	for _, p := range periods {
		c.Add(start.Add(time.Duration(p) * width).Sub(c.Now()))
		if got, ok := d.Hedge(); ok != (p < 10) {
			t.Fatalf("at period %d: Hedge() = %v, %v; want ok %v", p, got, ok, p < 10)
		}
	}
}

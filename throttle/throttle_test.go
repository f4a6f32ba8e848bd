package throttle

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	win "github.com/backoffgo/backoff/internal/window"
)

// manualClock is a clock that a test sets; safe for concurrent use.
type manualClock struct{ ns atomic.Int64 }

var manualEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func (c *manualClock) now() time.Time      { return manualEpoch.Add(time.Duration(c.ns.Load())) }
func (c *manualClock) set(d time.Duration) { c.ns.Store(int64(d)) }

// fixedRng returns draw from every Int64N(2⁵³) and counts its calls: it
// pins where the rule's threshold falls, which a seeded Rng cannot.
type fixedRng struct {
	draw  int64
	calls atomic.Int64
}

func (r *fixedRng) Int64N(n int64) int64 {
	if n != 1<<53 {
		panic("fixedRng: Int64N not of 2⁵³")
	}
	r.calls.Add(1)
	return r.draw
}

func newThrottle(t testing.TB, cfg Config, c *manualClock, rng backoff.Rng) *Throttle {
	t.Helper()
	cfg.Now = c.now
	th, err := New(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// fill counts requests to target, accepts of them accepted, all first
// tries (ungated unless FirstTries) sent and recorded.
func fill(th *Throttle, target string, requests, accepts int) {
	for i := range requests {
		th.Allow(target, false)
		th.Record(target, i < accepts)
	}
}

// counts returns target's window counts now.
func (th *Throttle) countsOf(target string) (requests, accepts uint64) {
	w := th.targets.Get(target)
	return w.counts(w.at(th.clock.Observe()))
}

func TestNewRejectsBadParameters(t *testing.T) {
	var nilRand *rand.Rand
	for _, tc := range []struct {
		cfg   Config
		rng   backoff.Rng
		param string
	}{
		{Config{K: 0.999}, backoff.RuntimeRng{}, "K"},
		{Config{K: -1}, backoff.RuntimeRng{}, "K"},
		{Config{K: math.NaN()}, backoff.RuntimeRng{}, "K"},
		{Config{K: math.Inf(1)}, backoff.RuntimeRng{}, "K"},
		{Config{Window: -time.Second}, backoff.RuntimeRng{}, "Window"},
		{Config{Window: 10*time.Millisecond - 1}, backoff.RuntimeRng{}, "Window"},
		{Config{MaxTargets: -1}, backoff.RuntimeRng{}, "MaxTargets"},
		{Config{MaxTargets: 10001}, backoff.RuntimeRng{}, "MaxTargets"},
		{Config{}, nil, "Rng"},
		{Config{}, nilRand, "Rng"},
	} {
		_, err := New(tc.cfg, tc.rng)
		var pe *backoff.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param || !strings.Contains(err.Error(), tc.param) {
			t.Errorf("New(%+v, %v) = %v, want a backoff.ParamError naming %s", tc.cfg, tc.rng, err, tc.param)
		}
	}
	for _, cfg := range []Config{{}, {K: 1, Window: 10 * time.Millisecond, MaxTargets: 1}, {K: math.MaxFloat64, Window: math.MaxInt64, MaxTargets: 10000}} {
		if _, err := New(cfg, backoff.RuntimeRng{}); err != nil {
			t.Errorf("New(%+v) = %v, want no error", cfg, err)
		}
	}
	th := backoff.Must(New(Config{FirstTries: true}, backoff.RuntimeRng{}))
	if got := th.Config(); got.K != 2 || got.Window != 2*time.Minute || got.MaxTargets != 100 || !got.FirstTries || got.Now != nil {
		t.Errorf("Config() = %+v, want the defaults K 2, Window 2m, MaxTargets 100, FirstTries kept", got)
	}
}

// TestRule pins p = max(0, (R − K·A)/(R + 1)) and its draw,
// rng.Int64N(2⁵³) < p·2⁵³, at the edges: the draw just below p·2⁵³ rejects
// and the one at or above it does not; no draw when p is 0.
func TestRule(t *testing.T) {
	for _, tc := range []struct {
		name       string
		k          float64
		requests   int
		accepts    int
		wantP      float64 // 0: no draw at all
		firstTries bool
	}{
		{"empty window", 2, 0, 0, 0, false},
		{"K=1, one request, no accept", 1, 1, 0, 0.5, false},
		{"K=1, all accepted", 1, 10, 10, 0, false},
		{"K=1, 10 requests, 9 accepts", 1, 10, 9, 1.0 / 11, false},
		{"K=2, R = 2A exactly", 2, 10, 5, 0, false},
		{"K=2, R = 2A + 1", 2, 11, 5, 1.0 / 12, false},
		{"K=2, nothing accepted", 2, 100, 0, 100.0 / 101, false},
		{"K=1.5", 1.5, 100, 10, 85.0 / 101, false},
		{"first tries gated", 2, 100, 0, 100.0 / 101, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, below := range []bool{true, false} {
				threshold := int64(math.Ceil(tc.wantP * (1 << 53)))
				rng := &fixedRng{draw: threshold}
				if below {
					rng.draw = threshold - 1
				}
				th := newThrottle(t, Config{K: tc.k, FirstTries: tc.firstTries}, new(manualClock), rng)
				th.cfg.FirstTries = false
				fill(th, "t", tc.requests, tc.accepts)
				th.cfg.FirstTries = tc.firstTries
				err := th.Allow("t", !tc.firstTries)
				if tc.wantP == 0 {
					if err != nil || rng.calls.Load() != 0 {
						t.Fatalf("Allow = %v after %d draws; want nil and no draw (p = 0)", err, rng.calls.Load())
					}
					return
				}
				if rng.calls.Load() != 1 || (err != nil) != below || err != nil && err != ErrThrottled {
					t.Fatalf("draw %d (threshold %d): Allow = %v after %d draws; want rejected %v, one draw", rng.draw, threshold, err, rng.calls.Load(), below)
				}
				want := uint64(tc.requests)
				if below {
					want++
				}
				if r, _ := th.countsOf("t"); r != want {
					t.Fatalf("requests counted = %d, want %d: Allow counts a request it rejects, and only that", r, want)
				}
			}
		})
	}
}

// TestFirstTriesUngated: a first try is not gated unless FirstTries, however
// much the backend rejects; a retry is.
func TestFirstTriesUngated(t *testing.T) {
	rng := &fixedRng{draw: 0} // rejects whenever it is drawn with p > 0
	th := newThrottle(t, Config{}, new(manualClock), rng)
	fill(th, "t", 1000, 0)
	if rng.calls.Load() != 0 {
		t.Fatalf("first tries drew %d times, want 0", rng.calls.Load())
	}
	if err := th.Allow("t", true); !errors.Is(err, ErrThrottled) {
		t.Fatalf("retry: Allow = %v, want ErrThrottled", err)
	}
}

// TestCountedAtOutcome: a request allowed counts nowhere until its
// outcome is recorded, so a burst of gated first tries with nothing
// recorded yet is not rejected; the outcome then counts at the time of its
// Record, though the request was allowed two windows before.
func TestCountedAtOutcome(t *testing.T) {
	rng := &fixedRng{draw: 0} // rejects whenever it is drawn with p > 0
	c := new(manualClock)
	th := newThrottle(t, Config{Window: time.Second, FirstTries: true}, c, rng)
	for range 100 {
		if err := th.Allow("t", false); err != nil {
			t.Fatalf("a first try in flight beside others: Allow = %v, want nil", err)
		}
	}
	if r, a := th.countsOf("t"); r != 0 || a != 0 || rng.calls.Load() != 0 {
		t.Fatalf("100 requests in flight: counts %d requests, %d accepts after %d draws; want none", r, a, rng.calls.Load())
	}
	c.set(2 * time.Second)
	for range 100 {
		th.Record("t", false)
	}
	if r, a := th.countsOf("t"); r != 100 || a != 0 {
		t.Fatalf("100 outcomes recorded: counts %d requests, %d accepts; want 100, 0", r, a)
	}
	if err := th.Allow("t", false); err != ErrThrottled {
		t.Fatalf("after 100 rejections: Allow = %v, want ErrThrottled", err)
	}
}

// TestStatistical: with a seeded Rng, the rejections of gated requests at
// fixed counts follow p within 5 standard deviations.
func TestStatistical(t *testing.T) {
	const n = 200000
	for _, tc := range []struct {
		k                 float64
		requests, accepts uint64
	}{{2, 1000, 100}, {2, 1000, 499}, {1, 50, 0}, {3, 10, 1}} {
		th := backoff.Must(New(Config{K: tc.k}, backoff.NewSeededRng(uint64(tc.requests))))
		p := (float64(tc.requests) - tc.k*float64(tc.accepts)) / float64(tc.requests+1)
		rejected := 0
		for range n {
			if th.gate(tc.requests, tc.accepts) != nil {
				rejected++
			}
		}
		sd := math.Sqrt(n * p * (1 - p))
		if d := math.Abs(float64(rejected) - n*p); d > 5*sd {
			t.Errorf("K %g, R %d, A %d: %d of %d rejected, want %.0f ± %.0f (5 sd)", tc.k, tc.requests, tc.accepts, rejected, n, n*p, 5*sd)
		}
	}
}

// TestClock: a window counts for 9 to 10 buckets; a clock that goes back
// changes nothing; one that jumps far ahead empties the window, and
// counting goes on from there.
func TestClock(t *testing.T) {
	const window = time.Second // buckets of 100ms
	c := new(manualClock)
	th := newThrottle(t, Config{Window: window}, c, backoff.NewSeededRng(1))
	for _, tc := range []struct {
		at                    time.Duration
		add                   int
		requests, wantAccepts uint64
	}{
		{0, 4, 4, 2},
		{99 * time.Millisecond, 0, 4, 2},
		{900*time.Millisecond + 99*time.Millisecond, 0, 4, 2}, // bucket 9: still counted
		{-time.Hour, 2, 6, 3}, // back: the latest time holds
		{window, 0, 2, 1},     // bucket 10: the first 4 expired
		{window + 99*time.Millisecond, 0, 2, 1},
		{2 * window, 0, 0, 0},
		{time.Duration(math.MaxInt64), 6, 6, 3}, // far ahead: saturates, still counts
		{time.Duration(math.MaxInt64) - window, 2, 8, 4},
	} {
		c.set(tc.at)
		fill(th, "t", tc.add, tc.add/2)
		if r, a := th.countsOf("t"); r != tc.requests || a != tc.wantAccepts {
			t.Fatalf("at %v: counts %d requests, %d accepts; want %d, %d", tc.at, r, a, tc.requests, tc.wantAccepts)
		}
	}
}

// TestMaxTargets: the first MaxTargets targets are isolated; the others
// share one window.
func TestMaxTargets(t *testing.T) {
	rng := &fixedRng{draw: 0}
	th := newThrottle(t, Config{MaxTargets: 2}, new(manualClock), rng)
	fill(th, "a", 100, 0) // a is rejecting everything
	fill(th, "b", 100, 100)
	fill(th, "c", 100, 0) // c and d share a window: a third target
	for _, tc := range []struct {
		target   string
		rejected bool
	}{{"a", true}, {"b", false}, {"c", true}, {"d", true}, {"", true}} {
		if err := th.Allow(tc.target, true); (err != nil) != tc.rejected {
			t.Errorf("Allow(%q) = %v, want rejected %v", tc.target, err, tc.rejected)
		}
	}
	if th.targets.Get("d") != th.targets.Get("c") || th.targets.Get("a") == th.targets.Get("b") {
		t.Error("targets past MaxTargets do not share one window, or the first two do")
	}
}

// TestHugeCounts: full buckets (2³²−1 requests each, no accept) give
// p = R/(R+1) < 1: the largest draw still gets through. Accepts as full
// give p = 0.
func TestHugeCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		accepts  uint64
		draw     int64
		rejected bool
	}{
		{"no accepts, largest draw", 0, 1<<53 - 1, false},
		{"no accepts, draw below R/(R+1)", 0, 1<<53 - 1<<18, true}, // p·2⁵³ ≈ 2⁵³ − 209715
		{"full accepts", math.MaxUint32, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := &fixedRng{draw: tc.draw}
			th := newThrottle(t, Config{K: 1}, new(manualClock), rng)
			w := th.targets.Get("t")
			for i := range w.buckets {
				w.buckets[i].requests.Store(math.MaxUint32)
				w.buckets[i].accepts.Store(tc.accepts)
			}
			if err := th.Allow("t", true); (err != nil) != tc.rejected {
				t.Fatalf("Allow = %v, want rejected %v", err, tc.rejected)
			}
			if r, _ := th.countsOf("t"); r != win.Periods*math.MaxUint32 {
				t.Fatalf("requests = %d, want saturated buckets %d", r, uint64(win.Periods*math.MaxUint32))
			}
		})
	}
}

// TestConcurrent: concurrent Allow and Record on shared targets count
// every request, recorded or rejected locally, and every accept (run with
// -race).
func TestConcurrent(t *testing.T) {
	th := newThrottle(t, Config{}, new(manualClock), backoff.NewSeededRng(1))
	const goroutines, each = 4, 2000
	var wg sync.WaitGroup
	var accepted atomic.Uint64
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				target := []string{"x", "y"}[i%2]
				if th.Allow(target, g%2 == 0) == nil {
					th.Record(target, i%3 != 0)
					if i%3 != 0 {
						accepted.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	rx, ax := th.countsOf("x")
	ry, ay := th.countsOf("y")
	if rx+ry != goroutines*each || ax+ay != accepted.Load() {
		t.Fatalf("counted %d+%d requests, %d+%d accepts; want %d requests, %d accepts", rx, ry, ax, ay, goroutines*each, accepted.Load())
	}
}

// TestAllocs: Allow and Record on a seen target allocate nothing, whether
// Allow rejects or not.
func TestAllocs(t *testing.T) {
	th := newThrottle(t, Config{}, new(manualClock), backoff.RuntimeRng{})
	fill(th, "t", 100, 10)
	n := testing.AllocsPerRun(1000, func() {
		_ = th.Allow("t", true)
		th.Record("t", false)
		_ = th.Allow("t", false)
		th.Record("t", true)
	})
	if n != 0 {
		t.Fatalf("Allow and Record allocate %v times per run, want 0", n)
	}
}

// BenchmarkAllowRecord: one gated request and its accept, on a seen target
// that is throttling; with time.Now, and with a clock that costs nothing
// (what the Throttle itself costs).
func BenchmarkAllowRecord(b *testing.B) {
	for _, bc := range []struct {
		name string
		now  func() time.Time
	}{{"time.Now", nil}, {"fixed clock", func() time.Time { return manualEpoch }}} {
		b.Run(bc.name, func(b *testing.B) {
			th := backoff.Must(New(Config{Now: bc.now}, backoff.RuntimeRng{}))
			fill(th, "backend", 1000, 100)
			b.ReportAllocs()
			for b.Loop() {
				if th.Allow("backend", true) == nil {
					th.Record("backend", true)
				}
			}
		})
	}
}

// BenchmarkAllowRecordParallel: the same from every P at once, on one
// target.
func BenchmarkAllowRecordParallel(b *testing.B) {
	th := backoff.Must(New(Config{}, backoff.RuntimeRng{}))
	fill(th, "backend", 1000, 100)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if th.Allow("backend", true) == nil {
				th.Record("backend", true)
			}
		}
	})
}

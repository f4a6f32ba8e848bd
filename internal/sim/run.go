package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
)

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// streams returns the environment and policy random streams for one run,
// derived from the seed and the run's coordinates only.
func streams(seed uint64, coords ...uint64) (env, pol *rand.Rand) {
	h := mix(seed)
	for _, c := range coords {
		h = mix(h ^ c)
	}
	env = rand.New(rand.NewPCG(mix(h^1), mix(h^2)))
	pol = rand.New(rand.NewPCG(mix(h^3), mix(h^4)))
	return env, pol
}

// Progress is a report on a running workload, for a caller that wants to
// show how far it has come.
type Progress struct {
	// Workload is the workload's name: "herd", "outage", "contention",
	// "amplification", "periodic", "recovery", "budget-amplification",
	// "outage-budget", "server-share", "share-fleet", "hedge" or "overload".
	Workload string
	// Policy is the name of a contender being simulated at the time of the
	// report (runs of several contenders may be in progress at once).
	Policy string
	// Done and Total measure the work in the workload's own units (clients,
	// jobs or requests simulated; for contention, runs weighted by the
	// square of their fleet size): Done/Total is the fraction done, in
	// [0, 1]. The last report has Done == Total.
	Done, Total int64
}

// ProgressInterval is how often, in wall-clock time, a workload calls its
// configuration's Progress function while it runs.
const ProgressInterval = 200 * time.Millisecond

// unit is one independent run of one contender: what a workload's run
// function gets from the skeleton.
type unit struct {
	c   Contender
	r   int            // the run's index within its contender
	pol backoff.Policy // built for this run from the policy stream
	env *rand.Rand     // the environment stream
	// advance adds n to the work done, for progress reports.
	advance func(n int64)
}

// progressChunk is how many units a run counts before it adds them to the
// shared progress counter.
const progressChunk = 1024

// counter batches a run's progress: tick after each unit, flush at the end.
type counter struct {
	u       *unit
	pending int64
}

func (c *counter) tick() {
	c.pending++
	if c.pending == progressChunk { // equivalent mutant: != only makes the batches smaller
		c.u.advance(c.pending)
		c.pending = 0
	}
}

func (c *counter) flush() { c.u.advance(c.pending) }

// plan is a workload's per-run skeleton: for every contender and every
// run index it derives the run's random streams from the seed and the
// run's coordinates, builds the policy, and calls run on up to GOMAXPROCS
// goroutines with one scratch value per goroutine. Results are returned by
// contender, in run order, so the reduction does not depend on scheduling.
// A panic in a contender's code and a nil policy become errors naming it.
type plan[S, O any] struct {
	workload   string
	contenders []Contender
	runs       int // runs per contender
	seed       uint64
	coords     func(r int) []uint64 // the run's stream coordinates, tag first
	policy     backoff.Config       // handed to every contender's New
	weight     func(r int) int64    // the run's work, in progress units
	progress   func(Progress)       // nil: no reports
	run        func(u *unit, scratch *S) (O, error)
}

func (p *plan[S, O]) execute() ([][]O, error) {
	n := len(p.contenders) * p.runs
	out := make([]O, n)
	errs := make([]error, n)
	var total int64
	for r := range p.runs {
		total += p.weight(r)
	}
	total *= int64(len(p.contenders)) // bounded by the work estimate: no overflow
	var done, current atomic.Int64
	advance := func(k int64) { done.Add(k) }
	one := func(i int, scratch *S) (err error) {
		ci, r := i/p.runs, i%p.runs
		c := p.contenders[ci]
		current.Store(int64(ci))
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("sim: %s: policy %q panicked: %v", p.workload, c.Name, v)
			}
		}()
		env, rng := streams(p.seed, p.coords(r)...)
		pol, err := build(c, p.policy, rng)
		if err != nil {
			return fmt.Errorf("sim: %s: %w", p.workload, err)
		}
		out[i], err = p.run(&unit{c: c, r: r, pol: pol, env: env, advance: advance}, scratch)
		if err != nil {
			return fmt.Errorf("sim: %s: policy %q: %w", p.workload, c.Name, err)
		}
		return nil
	}

	stop := make(chan struct{})
	var reporter sync.WaitGroup
	report := func() {
		p.progress(Progress{Workload: p.workload, Policy: p.contenders[current.Load()].Name, Done: done.Load(), Total: total})
	}
	if p.progress != nil {
		reporter.Go(func() {
			t := time.NewTicker(ProgressInterval)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					report()
				case <-stop:
					return
				}
			}
		})
	}

	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			var scratch S
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				errs[i] = one(i, &scratch)
			}
		})
	}
	wg.Wait()
	close(stop)
	reporter.Wait()
	if err := firstErr(errs); err != nil {
		return nil, err
	}
	if p.progress != nil {
		report() // every run has advanced by its weight: Done == Total
	}
	res := make([][]O, len(p.contenders))
	for ci := range res {
		res[ci] = out[ci*p.runs : (ci+1)*p.runs]
	}
	return res, nil
}

// firstErr returns the first non-nil error in index order.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// count adds one to hist[i], growing hist with zeros as needed, and returns
// it: a histogram over time windows whose extent is not known in advance.
// The caller has checked i against MaxSeries.
func count(hist []int64, i int64) []int64 {
	if i >= int64(len(hist)) {
		hist = append(hist, make([]int64, int(i)+1-len(hist))...)
	}
	hist[i]++
	return hist
}

// peakOf returns the largest count in hist, or 0.
func peakOf(hist []int64) int64 {
	var peak int64
	for _, n := range hist {
		peak = max(peak, n)
	}
	return peak
}

// clock is a point in virtual time held as a window index and the offset
// within that window, so that time can run past the largest time.Duration
// without overflowing: it stands for w·width + rem, 0 <= rem < width.
type clock struct {
	w   int64
	rem time.Duration
}

// add advances c by d >= 0 in windows of the given width. It reports false,
// leaving c unchanged, if the window index would reach limit.
func (c *clock) add(d, width time.Duration, limit int64) bool {
	q, m := int64(d/width), d%width
	rem := c.rem
	if m >= width-rem {
		rem = m - (width - rem)
		q++ // q <= MaxInt64/width: it cannot wrap, since width >= 1 and m > 0 here
	} else {
		rem += m
	}
	if q >= limit-c.w {
		return false
	}
	c.w += q
	c.rem = rem
	return true
}

// addTime returns a + b for a, b >= 0, and false if the sum passes the
// largest time.Duration.
func addTime(a, b time.Duration) (time.Duration, bool) {
	if b > math.MaxInt64-a {
		return 0, false
	}
	return a + b, true
}

// errTimeOverflow is returned when a simulated time would pass the largest
// time.Duration, about 292 years.
var errTimeOverflow = errors.New("virtual time passes the largest time.Duration (about 292 years)")

// mean accumulates durations and returns their mean rounded down, exactly,
// for any number of values each up to the largest time.Duration.
type mean struct {
	n    int64 // the number of values the mean is over
	q, r int64 // the sum so far is q·n + r, 0 <= r < n
}

func (m *mean) add(d time.Duration) {
	q, r := int64(d)/m.n, int64(d)%m.n
	m.q += q // the sum of n values each at most MaxInt64/n
	if r >= m.n-m.r {
		m.r = r - (m.n - m.r)
		m.q++
	} else {
		m.r += r
	}
}

// value is the mean of the n values added.
func (m *mean) value() time.Duration { return time.Duration(m.q) }

// mulSat returns a·b for a, b >= 0, saturating at math.MaxInt64.
func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// addSat returns a + b for a, b >= 0, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b { // equivalent mutant: >= saturates at a+b = MaxInt64, the same value
		return math.MaxInt64
	}
	return a + b
}

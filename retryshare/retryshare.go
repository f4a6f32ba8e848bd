// Package retryshare lets a server decide for a whole fleet of clients
// whether they should retry: it counts, per route, its incoming requests,
// the retries among them and the failing answers it let be retried, and
// while those are more than a threshold of the requests, a failing answer
// tells its caller not to retry, and while the retries are, a retry is
// refused as it arrives. backoffhttp's Handler and backoffgrpc's server
// interceptors use it.
package retryshare

import (
	"cmp"
	"math"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/keyed"
	win "github.com/backoffgo/backoff/internal/window"
)

// Share counts a server's incoming requests in a window per route and per
// caller slot, so that its failing answers can tell callers not to retry,
// and its retries be refused as they arrive: a fleet's retries then stay near Threshold of its requests on each
// route, however many clients each retry a little.
//
// A window holds, over the last Window, R requests, X retries (as the
// requests say, and the retries Admit refused: in a caller's slots as
// requests too, in a route's window as no requests of it) and F failing
// answers (every call of Refuse). A route
// also has an allowance A in [0, Burst], Burst when first seen: each
// request adds Threshold (rounded to a billionth) up to Burst, each
// failing answer let be retried takes 1, down to 0.
//
// [Share.Refuse] says not to retry when the route's failing answers, this
// one counted (F+1 of n = max(R, F+1)), are significant and A < 1, and
// never at Threshold 1. They
// are significant when P(Binomial(n, Threshold) ≥ F+1) ≤ Threshold (to a
// relative 1e-9), computed exactly for n < 65; from 65 on, when
// F+1 − 0.5 − n·Threshold > z·√(n·Threshold·(1−Threshold)), z the upper
// Threshold-quantile of the standard normal; always at Threshold 1. So 1
// of 1 is significant at any Threshold, 2 of 10 are not at 0.1 (0.26), 3
// of 10 are (0.07).
//
// A caller's retries are over on a route while the route's window is over
// by its retries (X ≥ MinRetries and X/max(R, X) > Threshold) and both of
// the caller's slots hold X ≥ MinRetries retries, significant as above
// with X for F+1 and R for n: P(Binomial(max(R, X), Threshold) ≥ X) ≤
// Threshold. Then [Share.Admit] refuses the caller's retries as
// they arrive, and Refuse says not to retry its failing answers: retries
// that a caller says it makes (forged or not) change only what callers
// that send as many get. First tries are never refused at arrival.
//
// Random failures below Threshold are seldom significant, and their
// requests keep A near Burst; an outage's are from its first failing
// answers, and A then lets about Threshold of the requests be retried,
// after Burst at its start, however few requests a window holds.
//
// The first MaxRoutes routes recorded get a window and an allowance each;
// all other routes share one of each. A caller key hashes to two of the Callers slots (the same two
// in every process); a slot counts the requests of every route.
//
// A window counts in 10 buckets of Window/10 (rounded down to the
// nanosecond) from New on: a request recorded at time t counts until at
// least t + 9 buckets and not from t + Window on; a bucket counts at most
// 2³²−1 of each. Its time is the latest clock reading, as a
// [backoff.Budget]'s. A Share is safe for concurrent use; Record,
// Refuse and Admit take no lock and do not allocate once their route and
// the caller's slots have been seen.
type Share struct {
	clock     win.Clock // in buckets
	threshold float64
	min       uint64
	callers   uint64 // slots
	gain      int64  // Threshold, in allowance units
	full      int64  // the most debt with which an answer may still be let be retried: Burst−1 units
	maxDebt   int64  // Burst units: an empty allowance
	// significant[r]: the fewest failing answers of r requests that are
	// significant; z: the same from smallRequests on, as a normal quantile.
	significant [smallRequests]uint32
	z           float64

	routes keyed.Map[window] // Max: MaxRoutes
	slots  atomic.Pointer[[]atomic.Pointer[window]]
}

// Config holds the parameters of a [Share]; a zero field takes the default
// that its comment gives.
type Config struct {
	Threshold  float64          // in (0, 1]: the share of requests above which a window is over; zero means 0.1
	Window     time.Duration    // at least 10 ms: the span counted; zero means 10 s
	MinRetries int              // at least 1: the fewest retries for a window to be over by its retries; zero means 2
	Burst      int              // 1 to 1,000,000: a route's allowance, at first and at most; zero means 4
	MaxRoutes  int              // 1 to 10,000: the routes with a window of their own; zero means 100
	Callers    int              // 1 to 65,536: the caller slots; zero means 64
	Now        func() time.Time // the clock, as in [backoff.BudgetConfig]
}

// shareBuckets is the number of buckets in a window.
const shareBuckets = win.Periods

// smallRequests is the number of requests from which a window's answers
// are tested by the normal approximation.
const smallRequests = 65

// unit is one invitation in a route's allowance: Threshold counts in
// billionths of it.
const unit = 1_000_000_000

// window counts requests, retries and failing answers in shareBuckets
// buckets; a route's window also holds its allowance, as a debt.
type window struct {
	period  win.Period
	buckets [shareBuckets]shareBucket
	debt    atomic.Int64 // Burst minus the allowance, in units: 0 is full
}

// shareBucket is one bucket of a window: each word is a stamped word of
// package window.
type shareBucket struct{ requests, retries, failing atomic.Uint64 }

// New returns a Share with nothing recorded, or a
// *[backoff.ParamError] when a field of cfg is out of range.
func New(cfg Config) (*Share, error) {
	cfg.Threshold, cfg.Window, cfg.MinRetries = cmp.Or(cfg.Threshold, 0.1), cmp.Or(cfg.Window, 10*time.Second), cmp.Or(cfg.MinRetries, 2)
	cfg.Burst, cfg.MaxRoutes, cfg.Callers = cmp.Or(cfg.Burst, 4), cmp.Or(cfg.MaxRoutes, 100), cmp.Or(cfg.Callers, 64)
	if !(cfg.Threshold > 0 && cfg.Threshold <= 1) {
		return nil, &backoff.ParamError{Param: "Threshold", Value: cfg.Threshold, Reason: "must be in (0, 1]"}
	}
	if cfg.Window < 10*time.Millisecond {
		return nil, &backoff.ParamError{Param: "Window", Value: cfg.Window, Reason: "must be at least 10ms"}
	}
	if cfg.MinRetries < 1 {
		return nil, &backoff.ParamError{Param: "MinRetries", Value: cfg.MinRetries, Reason: "must be at least 1"}
	}
	if cfg.Burst < 1 || cfg.Burst > 1_000_000 {
		return nil, &backoff.ParamError{Param: "Burst", Value: cfg.Burst, Reason: "must be in [1, 1000000]"}
	}
	if cfg.MaxRoutes < 1 || cfg.MaxRoutes > 10000 {
		return nil, &backoff.ParamError{Param: "MaxRoutes", Value: cfg.MaxRoutes, Reason: "must be in [1, 10000]"}
	}
	if cfg.Callers < 1 || cfg.Callers > 1<<16 {
		return nil, &backoff.ParamError{Param: "Callers", Value: cfg.Callers, Reason: "must be in [1, 65536]"}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	s := &Share{clock: win.NewClock(now, cfg.Window/shareBuckets), threshold: cfg.Threshold,
		min: uint64(cfg.MinRetries), callers: uint64(cfg.Callers),
		gain: int64(math.Round(cfg.Threshold * unit)), full: int64(cfg.Burst-1) * unit, maxDebt: int64(cfg.Burst) * unit,
		// The upper Threshold-quantile of the standard normal: -Inf at 1.
		z: math.Sqrt2 * math.Erfcinv(2*cfg.Threshold)}
	if math.IsInf(s.z, 1) {
		// Erfcinv(x) is Erfinv(1−x): +Inf once 1−x rounds to 1 (Threshold
		// below 2⁻⁵⁴). √(−2 ln Threshold), above the quantile but below 39,
		// decides alike: z·√(n·Threshold) < 0.1 for any n a window holds.
		s.z = math.Sqrt(-2 * math.Log(cfg.Threshold))
	}
	for r := range smallRequests {
		s.significant[r] = uint32(fewestSignificant(r, cfg.Threshold))
	}
	s.routes.Max = cfg.MaxRoutes
	return s, nil
}

// fewestSignificant returns the fewest failing answers f of r requests
// with P(Binomial(r, p) ≥ f) ≤ p, or r+1 when even r are not.
func fewestSignificant(r int, p float64) int {
	if p == 1 {
		return 1 // every tail is 1
	}
	// The tail from r down, each term in logarithms (a term of a tiny p
	// underflows to 0 alone). A relative slack of 1e-9 keeps exact ties
	// (1 of 1 is p) on the significant side of float rounding.
	lr, _ := math.Lgamma(float64(r + 1))
	tail, f := 0.0, r+1
	for k := r; k >= 1; k-- {
		lk, _ := math.Lgamma(float64(k + 1))
		lrk, _ := math.Lgamma(float64(r - k + 1))
		if tail += math.Exp(lr - lk - lrk + float64(k)*math.Log(p) + float64(r-k)*math.Log1p(-p)); tail > p*(1+1e-9) {
			return f
		}
		f = k
	}
	return f
}

// significantly reports whether f failing answers of r requests (taken
// as f when fewer) are significantly more than Threshold of them. No
// caller asks at Threshold 1: Refuse never refuses there, and a route's
// retries are never above it.
func (s *Share) significantly(f, r uint64) bool {
	if r = max(r, f); r < smallRequests {
		return f >= uint64(s.significant[r])
	}
	m := float64(r) * s.threshold
	return float64(f)-0.5-m > s.z*math.Sqrt(m*(1-s.threshold))
}

// Record counts one incoming request of route from caller; retry reports
// whether it says it is a retry. Any string is a route or a caller key,
// "" too.
func (s *Share) Record(route, caller string, retry bool) {
	p := s.clock.Observe()
	w := s.route(route)
	w.record(p, retry)
	for {
		d := w.debt.Load()
		if d == 0 || w.debt.CompareAndSwap(d, max(d-s.gain, 0)) {
			break
		}
	}
	a, b := s.slotsOf(caller)
	a.record(p, retry)
	if b != a {
		b.record(p, retry)
	}
}

// Refuse reports whether a failing answer to a request of route from
// caller should tell the caller not to retry (see [Share] for the rule);
// it counts the answer in the route's window and, when it returns false,
// takes it from the route's allowance. Call it once per failing answer
// that a caller may retry, after recording the request. A concurrent
// Record or Refuse may or may not be counted.
func (s *Share) Refuse(route, caller string) bool {
	p := s.clock.Observe()
	w := s.route(route)
	requests, retries, failing := w.counts(p)
	q := w.at(p)
	win.Bump(&w.buckets[q%shareBuckets].failing, q)
	if s.retriesRefused(requests, retries, caller, p) {
		return true
	}
	// Threshold 1 lets every answer be retried: its allowance, which a
	// burst of answers to requests recorded before them spends, is moot.
	significant := s.threshold < 1 && s.significantly(failing+1, requests)
	for {
		d := w.debt.Load()
		if significant && d > s.full {
			return true
		}
		if w.debt.CompareAndSwap(d, min(d+unit, s.maxDebt)) {
			return false
		}
	}
}

// Admit reports whether a retry of route from caller, as it arrives,
// should be served: false while the caller's retries are over on the
// route (see [Share]). A retry it refuses it counts, so that the retries
// refused keep the windows over while they come: in the caller's slots as
// a request and a retry, in the route's window as a retry only (not a
// request: it neither dilutes the route's failing answers nor adds to its
// allowance, which other callers' answers share). Record a retry it
// admits, not one it refuses. Call it for retries only; a first try is
// always served.
func (s *Share) Admit(route, caller string) bool {
	p := s.clock.Observe()
	w := s.find(route)
	if w == nil {
		return true // a route never recorded: its window is empty
	}
	requests, retries, _ := w.counts(p)
	if !s.retriesRefused(requests, retries, caller, p) {
		return true
	}
	q := w.at(p)
	win.Bump(&w.buckets[q%shareBuckets].retries, q)
	a, b := s.slotsOf(caller)
	a.record(p, true)
	if b != a {
		b.record(p, true)
	}
	return false
}

// retriesRefused reports whether caller's retries are over on a route whose
// window counts requests and retries at period p.
func (s *Share) retriesRefused(requests, retries uint64, caller string, p int64) bool {
	if retries < s.min || !s.above(retries, requests) {
		return false
	}
	a, b := s.slotsOf(caller)
	return a.callerOver(s, p) && b.callerOver(s, p)
}

// above reports whether n is more than Threshold of requests (taken as n
// when fewer).
func (s *Share) above(n, requests uint64) bool {
	// A quotient, not a product: a share of exactly Threshold (3 of 10 at
	// 0.3) rounds to Threshold itself and is not over it.
	return float64(n)/float64(max(requests, n)) > s.threshold
}

// callerOver reports whether caller slot w, at period p, is over by its
// retries: at least MinRetries of them, significantly more than Threshold
// of its requests, so that a caller that retries less than Threshold of
// its requests is seldom refused by chance, in a window of few of them.
func (w *window) callerOver(s *Share, p int64) bool {
	requests, retries, _ := w.counts(p)
	return retries >= s.min && s.significantly(retries, requests)
}

// route returns the window of route: its own when it has one or there is
// room for it, the shared one of the other routes otherwise.
func (s *Share) route(route string) *window { return s.routes.Get(route) }

// find returns the window of route, nil if it has none yet and there is
// room for it.
func (s *Share) find(route string) *window { return s.routes.Find(route) }

// slotsOf returns the two slots of caller, one when there is only one.
func (s *Share) slotsOf(caller string) (a, b *window) {
	h := hash(caller)
	i, j := h%s.callers, h%s.callers
	if s.callers > 1 {
		j = (i + 1 + (h>>32)%(s.callers-1)) % s.callers
	}
	return s.slot(i), s.slot(j)
}

// slot returns slot i, made at its first use.
func (s *Share) slot(i uint64) *window {
	sl := s.slots.Load()
	if sl == nil {
		fresh := make([]atomic.Pointer[window], s.callers)
		s.slots.CompareAndSwap(nil, &fresh)
		sl = s.slots.Load()
	}
	p := &(*sl)[i]
	if w := p.Load(); w != nil {
		return w
	}
	p.CompareAndSwap(nil, new(window))
	return p.Load()
}

// hash is FNV-1a of key, finished with splitmix64's mix so that its high
// and low halves are both well spread.
func hash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// record counts one request at period p.
func (w *window) record(p int64, retry bool) {
	q := w.at(p)
	b := &w.buckets[q%shareBuckets]
	win.Bump(&b.requests, q)
	if retry {
		win.Bump(&b.retries, q)
	}
}

// counts returns what w counts at period p.
func (w *window) counts(p int64) (requests, retries, failing uint64) {
	q := w.at(p)
	// Failing answers, then retries, then requests: a request is recorded
	// before its retry, and before its failing answer, so
	// the requests read last include those of what was read first.
	for i := range w.buckets {
		failing += win.Current(w.buckets[i].failing.Load(), q)
	}
	for i := range w.buckets {
		retries += win.Current(w.buckets[i].retries.Load(), q)
	}
	for i := range w.buckets {
		requests += win.Current(w.buckets[i].requests.Load(), q)
	}
	return requests, retries, failing
}

// at moves w to period p when it is behind it, clearing the words that
// the new window no longer holds, and returns w's period (see
// [win.Period.At]).
func (w *window) at(p int64) int64 {
	return w.period.At(p, func(h int64) {
		for i := range w.buckets {
			win.Expire(&w.buckets[i].requests, h, p)
			win.Expire(&w.buckets[i].retries, h, p)
			win.Expire(&w.buckets[i].failing, h, p)
		}
	})
}

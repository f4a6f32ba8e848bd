// Package throttle is client-side adaptive throttling, as in Google's SRE
// book ("Handling Overload"): a client that sees a backend reject much of
// what it sends rejects some of its own requests locally, before they
// reach the backend, and keeps probing it with the rest. backoffhttp's
// Transport and backoffgrpc's Client take a [Throttle].
package throttle

import (
	"cmp"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/keyed"
	"github.com/backoffgo/backoff/internal/nilness"
	win "github.com/backoffgo/backoff/internal/window"
)

// ErrThrottled matches a [Throttle]'s local rejection of a request, with
// errors.Is.
var ErrThrottled = errors.New("throttle: rejected locally: the backend is rejecting requests")

// Config holds the parameters of a [Throttle]; a zero field takes the
// default that its comment gives.
type Config struct {
	K          float64          // finite, at least 1: requests may reach K·accepts before any is rejected locally; zero means 2
	Window     time.Duration    // at least 10 ms: the span counted; zero means 2 minutes
	FirstTries bool             // when true, first tries are gated too; retries and hedges always are
	MaxTargets int              // 1 to 10,000: the targets with a window of their own; zero means 100
	Now        func() time.Time // the clock, as in [backoff.BudgetConfig]
}

// Throttle counts, per target, the requests a client makes and the
// accepts among them, and rejects requests locally while the backend
// accepts too few. Make one with [New].
//
// A request counts once: one sent when [Throttle.Record] gives its
// outcome, one rejected locally when [Throttle.Allow] rejects it. A request
// in flight counts nowhere, nor does one allowed and never recorded; an
// outcome counts at the time of its Record, however long ago the request
// was allowed. Allow reads the target's window, R requests and A accepts,
// and rejects a gated request with probability
// p = max(0, (R − K·A) / (R + 1)), computed in float64 and drawn as
// rng.Int64N(2⁵³) < p·2⁵³; when p is 0 it draws nothing. So nothing is
// rejected while R ≤ K·A, and p < 1: some requests always get through to
// probe the backend.
//
// The first MaxTargets targets seen get a window each; all other targets
// share one. A window counts in 10 buckets of Window/10 (rounded down to
// the nanosecond) from New on: a request counted at time t counts until at
// least t + 9 buckets and not from t + Window on; a bucket counts at most
// 2³²−1 requests and as many accepts. The time is the latest clock
// reading, as a [backoff.Budget]'s: a clock that goes back changes
// nothing. A Throttle is safe for concurrent use; Allow and Record take no
// lock and do not allocate once their target has been seen (when rng's
// Int64N does neither).
type Throttle struct {
	clock   win.Clock // in buckets
	rng     backoff.Rng
	targets keyed.Map[window]
	cfg     Config
}

// window counts requests and accepts in win.Periods buckets.
type window struct {
	period  win.Period
	buckets [win.Periods]bucket
}

// bucket is one bucket of a window: each word is a stamped word of
// package window.
type bucket struct{ requests, accepts atomic.Uint64 }

// New returns a Throttle with nothing counted, or a *[backoff.ParamError]
// when a field of cfg is out of range or rng is nil. rng must be safe for
// concurrent use ([backoff.RuntimeRng], [backoff.NewSeededRng]).
func New(cfg Config, rng backoff.Rng) (*Throttle, error) {
	cfg.K, cfg.Window, cfg.MaxTargets = cmp.Or(cfg.K, 2), cmp.Or(cfg.Window, 2*time.Minute), cmp.Or(cfg.MaxTargets, 100)
	if !(cfg.K >= 1 && cfg.K <= math.MaxFloat64) {
		return nil, &backoff.ParamError{Param: "K", Value: cfg.K, Reason: "must be finite and at least 1"}
	}
	if cfg.Window < 10*time.Millisecond {
		return nil, &backoff.ParamError{Param: "Window", Value: cfg.Window, Reason: "must be at least 10ms"}
	}
	if cfg.MaxTargets < 1 || cfg.MaxTargets > 10000 {
		return nil, &backoff.ParamError{Param: "MaxTargets", Value: cfg.MaxTargets, Reason: "must be in [1, 10000]"}
	}
	if nilness.IsNil(rng) {
		return nil, &backoff.ParamError{Param: "Rng", Value: nil, Reason: "must not be nil; use backoff.RuntimeRng{} or backoff.NewSeededRng"}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Throttle{clock: win.NewClock(now, cfg.Window/win.Periods),
		rng: rng, targets: keyed.Map[window]{Max: cfg.MaxTargets}, cfg: cfg}, nil
}

// Config returns the throttle's configuration, defaults filled in.
func (t *Throttle) Config() Config { return t.cfg }

// Allow returns nil, or [ErrThrottled] when it rejects a request to
// target locally (see [Throttle] for the rule): the request is then not to
// be sent, and counts as a request now. A request allowed is to be sent
// and its outcome recorded with [Throttle.Record], once. retry reports
// whether the request is a retry or a hedge; a first try is gated only
// when Config.FirstTries is set. Any string is a target, "" too.
func (t *Throttle) Allow(target string, retry bool) error {
	if !retry && !t.cfg.FirstTries {
		return nil
	}
	p := t.clock.Observe()
	w := t.targets.Get(target)
	q := w.at(p)
	err := t.gate(w.counts(q))
	if err != nil {
		win.Bump(&w.buckets[q%win.Periods].requests, q)
	}
	return err
}

// gate draws whether to reject a request, from the window's counts.
func (t *Throttle) gate(requests, accepts uint64) error {
	r := float64(requests)
	p := (r - t.cfg.K*float64(accepts)) / (r + 1)
	if !(p > 0) {
		return nil
	}
	if float64(t.rng.Int64N(1<<53)) < p*(1<<53) {
		return ErrThrottled
	}
	return nil
}

// Record counts a request to target that was sent, once its outcome is
// known: one request and, when accepted, one accept. accepted reports that
// the backend did not reject the request (it answered without an overload
// signal, or the client cancelled the request first).
func (t *Throttle) Record(target string, accepted bool) {
	p := t.clock.Observe()
	w := t.targets.Get(target)
	q := w.at(p)
	b := &w.buckets[q%win.Periods]
	win.Bump(&b.requests, q)
	if accepted {
		win.Bump(&b.accepts, q)
	}
}

// counts returns what w counts at period p.
func (w *window) counts(p int64) (requests, accepts uint64) {
	// Accepts, then requests: Record counts a request before its accept,
	// so the requests read last include those of the accepts read first.
	for i := range w.buckets {
		accepts += win.Current(w.buckets[i].accepts.Load(), p)
	}
	for i := range w.buckets {
		requests += win.Current(w.buckets[i].requests.Load(), p)
	}
	return requests, accepts
}

// at moves w to period p when it is behind it, clearing the words that
// the new window no longer holds, and returns w's period (see
// [win.Period.At]).
func (w *window) at(p int64) int64 {
	return w.period.At(p, func(h int64) {
		for i := range w.buckets {
			win.Expire(&w.buckets[i].requests, h, p)
			win.Expire(&w.buckets[i].accepts, h, p)
		}
	})
}

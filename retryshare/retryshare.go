// Package retryshare lets a server decide for a whole fleet of clients
// whether they should retry: it counts the share of its incoming requests
// that are retries, and while that share is above a threshold the server's
// failing answers tell callers not to retry. backoffhttp's Handler and
// backoffgrpc's server interceptors use it.
package retryshare

import (
	"cmp"
	"math"
	"sync/atomic"
	"time"

	"github.com/backoffgo/backoff"
)

// Share counts the share of a server's incoming requests that are
// retries, so that its failing answers can tell callers not to retry while
// that share is above Threshold: a fleet's retries then stay near Threshold
// of its requests, however many clients each retry a little. It counts in 10
// buckets of Window/10 (rounded down to the nanosecond) from New
// on: a request recorded at time t counts until at least t + 9 buckets and
// not from t + Window on; a bucket counts at most 2³²−1 requests. Its time is
// the latest clock reading, as a [backoff.Budget]'s. It is safe for concurrent use;
// Record and Over take no lock and do not allocate.
type Share struct {
	period    atomic.Int64 // the latest bucket period, in bucket widths since epoch
	buckets   [shareBuckets]shareBucket
	clock     func() time.Time
	epoch     time.Time
	width     int64 // ns per bucket
	threshold float64
	min       uint64
}

// Config holds the parameters of a [Share]; a zero field takes the default
// that its comment gives.
type Config struct {
	Threshold  float64          // in (0, 1]: Over reports true above this share of retries; zero means 0.1
	Window     time.Duration    // at least 10 ms: the span counted; zero means 10 s
	MinRetries int              // at least 1: the fewest retries in the window for Over to report true; zero means 2
	Now        func() time.Time // the clock, as in [backoff.BudgetConfig]
}

// shareBuckets is the number of buckets in a Share's window.
const shareBuckets = 10

// shareBucket is one bucket of the window: each word holds the period it
// counts (its low 32 bits) in its high half and the count in its low half.
type shareBucket struct{ requests, retries atomic.Uint64 }

// New returns a Share with nothing recorded, or a
// *[backoff.ParamError] when a field of cfg is out of range.
func New(cfg Config) (*Share, error) {
	cfg.Threshold, cfg.Window, cfg.MinRetries = cmp.Or(cfg.Threshold, 0.1), cmp.Or(cfg.Window, 10*time.Second), cmp.Or(cfg.MinRetries, 2)
	if !(cfg.Threshold > 0 && cfg.Threshold <= 1) {
		return nil, &backoff.ParamError{Param: "Threshold", Value: cfg.Threshold, Reason: "must be in (0, 1]"}
	}
	if cfg.Window < 10*time.Millisecond {
		return nil, &backoff.ParamError{Param: "Window", Value: cfg.Window, Reason: "must be at least 10ms"}
	}
	if cfg.MinRetries < 1 {
		return nil, &backoff.ParamError{Param: "MinRetries", Value: cfg.MinRetries, Reason: "must be at least 1"}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Share{clock: now, epoch: now(), width: int64(cfg.Window / shareBuckets), threshold: cfg.Threshold, min: uint64(cfg.MinRetries)}, nil
}

// Record counts one incoming request; retry reports whether it says it is
// a retry.
func (s *Share) Record(retry bool) {
	p := s.observe()
	b := &s.buckets[p%shareBuckets]
	bump(&b.requests, p)
	if retry {
		bump(&b.retries, p)
	}
}

// Over reports whether the window holds at least MinRetries retries, more
// than Threshold of its requests: the server's failing answers should then
// tell callers not to retry. A concurrent Record may or may not be counted.
func (s *Share) Over() bool {
	p := s.observe()
	// Retries first: a Record counts its request before its retry, so the
	// requests read afterwards include those of the retries read.
	var retries, requests uint64
	for i := range s.buckets {
		retries += current(s.buckets[i].retries.Load(), p)
	}
	if retries < s.min {
		return false
	}
	for i := range s.buckets {
		requests += current(s.buckets[i].requests.Load(), p)
	}
	// A quotient, not a product: a share of exactly Threshold (3 of 10 at
	// 0.3) rounds to Threshold itself and is not over it.
	return float64(retries)/float64(max(requests, retries)) > s.threshold
}

// current returns the count of word w when w counts one of the window's
// periods at period p (or a later one, which a concurrent Record started),
// and 0 otherwise.
func current(w uint64, p int64) uint64 {
	// Sequentially, observe has cleared every word older than the window
	// already (so "> shareBuckets" is equivalent there); this check is for
	// a word that a concurrent observe has yet to clear.
	if int32(uint32(p)-uint32(w>>32)) >= shareBuckets {
		return 0
	}
	return w & math.MaxUint32
}

// bump adds one to the count of w for period p: w starts over when it is
// empty or counts an earlier period, keeps its period when that is later (a
// Record whose reading another has overtaken), and counts at most 2³²−1.
func bump(w *atomic.Uint64, p int64) {
	for {
		old := w.Load()
		next := uint64(uint32(p))<<32 | 1
		if n := old & math.MaxUint32; n != 0 && int32(uint32(p)-uint32(old>>32)) <= 0 { // this period or a later one
			if n == math.MaxUint32 {
				return
			}
			next = old + 1
		}
		if w.CompareAndSwap(old, next) {
			return
		}
	}
}

// observe reads the clock, raises the Share's period to the reading's
// and returns it. The goroutine that moves the period on clears every
// bucket word that the new window no longer holds, so that every word's
// count is of a period within 2³¹ of the latest and its stamp unambiguous.
func (s *Share) observe() int64 {
	// Sub saturates, so a reading far ahead gives a period below 2⁶³.
	r := int64(s.clock().Sub(s.epoch)) / s.width
	for {
		h := s.period.Load()
		if r <= h {
			return h
		}
		if s.period.CompareAndSwap(h, r) {
			for i := range s.buckets {
				expire(&s.buckets[i].requests, h, r)
				expire(&s.buckets[i].retries, h, r)
			}
			return r
		}
	}
}

// expire clears w when it counts a period that was at most h and falls out
// of the window at period p.
func expire(w *atomic.Uint64, h, p int64) {
	for {
		old := w.Load()
		if old&math.MaxUint32 == 0 {
			return
		}
		age := int64(int32(uint32(h) - uint32(old>>32))) // its period is h - age
		if age < 0 || h-age > p-shareBuckets {
			return // a later Record's, or still in the window
		}
		if w.CompareAndSwap(old, 0) {
			return
		}
	}
}

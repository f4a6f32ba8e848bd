package retryshare

import (
	"sync/atomic"

	win "github.com/backoffgo/backoff/internal/window"
)

// The names by which the package's tests reach package window.

func (s *Share) observe() int64      { return s.clock.Observe() }
func bump(w *atomic.Uint64, p int64) { win.Bump(w, p) }

// overByRetries reports whether route's window is over by its retries.
func (s *Share) overByRetries(route string) bool {
	requests, retries, _ := s.route(route).counts(s.observe())
	return retries >= s.min && s.above(retries, requests)
}

// fail counts n failing answers in route's window, without Refuse: its
// allowance is left as it is.
func (s *Share) fail(route string, n int) {
	w := s.route(route)
	q := w.at(s.observe())
	for range n {
		bump(&w.buckets[q%shareBuckets].failing, q)
	}
}

// spend empties route's allowance.
func (s *Share) spend(route string) { s.route(route).debt.Store(s.maxDebt) }

// allowance returns route's allowance, in invitations.
func (s *Share) allowance(route string) float64 {
	return float64(s.maxDebt-s.route(route).debt.Load()) / unit
}

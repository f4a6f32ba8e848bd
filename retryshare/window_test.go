package retryshare

import (
	"sync/atomic"

	win "github.com/backoffgo/backoff/internal/window"
)

// The names by which the package's tests reach package window.

func (s *Share) observe() int64      { return s.clock.Observe() }
func bump(w *atomic.Uint64, p int64) { win.Bump(w, p) }

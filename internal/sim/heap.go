package sim

import "time"

// event is a pending event of one client in a queue ordered as a binary
// min-heap: a message arriving at Contention's server, or a call of
// OutageBudget. Events are ordered by time, then by rank.
type event struct {
	t time.Duration
	// rank orders events of the same time, the lower first. Contention
	// leaves it 0, so its ties come out in the order the heap operations
	// give them (deterministic, and pinned by its tests); OutageBudget sets
	// it to the client, so that its order does not depend on the layout.
	rank   int32
	client int32 // the limits keep the clients far below 2^31
	// attempt is OutageBudget's call number, 1 for the first call, at
	// most MaxClientAttempts; Contention does not use it.
	attempt int32
}

func (e event) before(o event) bool {
	return e.t < o.t || e.t == o.t && e.rank < o.rank
}

// siftDown places e at index i of the heap h or below it, moving up each
// smaller child that comes before e, so that h is a heap again if the
// subtrees below i were.
func siftDown(h []event, i int, e event) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(e) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
}

// heapify orders h as a heap.
func heapify(h []event) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, h[i])
	}
}

// popTop removes the first event of the heap h and returns the rest.
func popTop(h []event) []event {
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	if n > 0 {
		siftDown(h, 0, last)
	}
	return h
}

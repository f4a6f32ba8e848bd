// Package hop carries, in a request's context, whether a retry loop serving
// that request has retried, so that the server can tell its caller not to
// retry the answer: retries then happen at one layer only, across service
// hops as within a process.
package hop

import (
	"context"
	"sync/atomic"
)

type key struct{}

// Marker records whether a loop in its context gave up after retrying, and
// how many are retrying now. It is safe for concurrent use.
type Marker struct {
	set      atomic.Bool
	retrying atomic.Int64
}

// With returns a context carrying a new Marker, and the Marker.
func With(ctx context.Context) (context.Context, *Marker) {
	m := new(Marker)
	return context.WithValue(ctx, key{}, m), m
}

// Mark sets the Marker of ctx, if it carries one.
func Mark(ctx context.Context) {
	if m := from(ctx); m != nil {
		m.set.Store(true)
	}
}

// Retrying tells the Marker of ctx, if it carries one, that a loop has begun
// to retry, and returns it (nil if none); the loop calls Done on it when it
// ends, after Mark if it gave up.
func Retrying(ctx context.Context) *Marker {
	m := from(ctx)
	if m != nil {
		m.retrying.Add(1)
	}
	return m
}

// Done tells m that a loop that called Retrying has ended. It does nothing
// on a nil *Marker.
func (m *Marker) Done() {
	if m != nil {
		m.retrying.Add(-1)
	}
}

// Marked reports whether a loop marked m, or one is retrying now.
func (m *Marker) Marked() bool { return m.set.Load() || m.retrying.Load() > 0 }

func from(ctx context.Context) *Marker {
	m, _ := ctx.Value(key{}).(*Marker)
	return m
}

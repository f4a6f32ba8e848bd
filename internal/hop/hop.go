// Package hop carries, in a request's context, whether a retry loop serving
// that request gave up after retrying, so that the server can tell its
// caller not to retry the answer: retries then happen at one layer only,
// across service hops as within a process.
package hop

import (
	"context"
	"sync/atomic"
)

type key struct{}

// Marker records that a loop in its context gave up after retrying. It is
// safe for concurrent use.
type Marker struct{ set atomic.Bool }

// With returns a context carrying a new Marker, and the Marker.
func With(ctx context.Context) (context.Context, *Marker) {
	m := new(Marker)
	return context.WithValue(ctx, key{}, m), m
}

// Mark sets the Marker of ctx, if it carries one.
func Mark(ctx context.Context) {
	if m, _ := ctx.Value(key{}).(*Marker); m != nil {
		m.set.Store(true)
	}
}

// Marked reports whether a loop marked m.
func (m *Marker) Marked() bool { return m.set.Load() }

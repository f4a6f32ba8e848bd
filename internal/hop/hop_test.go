package hop

import (
	"context"
	"testing"
)

func TestMarker(t *testing.T) {
	Mark(context.Background()) // no marker: nothing to do, no panic
	ctx, m := With(context.Background())
	if m.Marked() {
		t.Fatal("a new Marker is marked")
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	Mark(inner)
	if !m.Marked() {
		t.Error("Mark through a derived context did not reach the Marker")
	}
	_, other := With(ctx)
	if other.Marked() {
		t.Error("a nested Marker starts marked")
	}
}

func TestRetrying(t *testing.T) {
	Retrying(context.Background()).Done() // no marker: nil, and Done on nil does nothing
	ctx, m := With(context.Background())
	a, b := Retrying(ctx), Retrying(ctx)
	if a != m || b != m || !m.Marked() {
		t.Fatal("a Marker with loops retrying is not marked")
	}
	a.Done()
	if !m.Marked() {
		t.Error("unmarked while a second loop is still retrying")
	}
	b.Done()
	if m.Marked() {
		t.Error("marked after every loop ended without giving up")
	}
}

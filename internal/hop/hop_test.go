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

package errchain

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
)

// wraps is an error of its own type that wraps err.
type wraps struct{ err error }

func (w wraps) Error() string { return "wraps" }
func (w wraps) Unwrap() error { return w.err }

// joins wraps several errors, nils among them.
type joins []error

func (j joins) Error() string   { return "joins" }
func (j joins) Unwrap() []error { return j }

// named is a leaf with a name.
type named string

func (n named) Error() string { return string(n) }

// viewOf is a view that shows err and has a chain of its own, next.
type viewOf struct {
	Viewer
	err  error
	next []error
}

func (v viewOf) Error() string   { return "view" }
func (v viewOf) Shown() error    { return v.err }
func (v viewOf) Unwrap() []error { return v.next }

// As sets *target to err when it is a named, as a view's As does.
func (v viewOf) As(target any) bool {
	n, ok := v.err.(named)
	p, isNamed := target.(*named)
	if ok && isNamed {
		*p = n
	}
	return ok && isNamed
}

// visits returns the errors Walk visits in order, their texts joined, and
// whether it stopped, with visit stopping at stop and skipping skip.
func visits(err error, stop, skip string) (string, bool) {
	var seen []string
	stopped := Walk(err, func(err error) Step {
		seen = append(seen, err.Error())
		switch err.Error() {
		case stop:
			return Stop
		case skip:
			return Skip
		}
		return Continue
	})
	return strings.Join(seen, " "), stopped
}

func TestWalkOrder(t *testing.T) {
	tree := joins{named("a"), wraps{joins{named("b"), nil, named("c")}}, nil, wraps{nil}, named("d")}
	for _, tt := range []struct {
		name, stop, skip string
		err              error
		want             string
		stopped          bool
	}{
		{"pre-order, depth first, nils skipped", "", "", tree, "joins a wraps joins b c wraps d", false},
		{"stop in a branch ends the walk", "b", "", tree, "joins a wraps joins b", true},
		{"skip keeps out of what the error wraps", "", "wraps", tree, "joins a wraps wraps d", false},
		{"skip the root", "", "joins", tree, "joins", false},
		{"a linear chain", "", "", wraps{wraps{io.EOF}}, "wraps wraps EOF", false},
		{"stop at the last", "EOF", "", fmt.Errorf("x: %w", io.EOF), "x: EOF EOF", true},
		{"nil", "", "", nil, "", false},
		{"a view is visited as what it shows, then its own chain", "", "", wraps{viewOf{err: wraps{named("hidden")}, next: []error{named("a")}}}, "wraps wraps a", false},
		{"skipping what a view shows keeps out of its chain", "", "a", joins{viewOf{err: named("a"), next: []error{named("b")}}, named("c")}, "joins a c", false},
		{"stop at what a view shows", "a", "", viewOf{err: named("a")}, "a", true},
	} {
		got, stopped := visits(tt.err, tt.stop, tt.skip)
		if got != tt.want || stopped != tt.stopped {
			t.Errorf("%s: visited %q, stopped %v; want %q, %v", tt.name, got, stopped, tt.want, tt.stopped)
		}
	}
}

// TestWalkAsErrorsIs: Walk visits what errors.Is visits, in its order.
func TestWalkAsErrorsIs(t *testing.T) {
	target := named("target")
	for _, err := range []error{
		errors.Join(io.EOF, fmt.Errorf("a: %w", &fs.PathError{Err: target})),
		fmt.Errorf("%w and %w", wraps{nil}, joins{nil, target}),
		wraps{io.EOF},
	} {
		found := Walk(err, func(e error) Step {
			if e == target {
				return Stop
			}
			return Continue
		})
		if found != errors.Is(err, target) {
			t.Errorf("Walk found %v in %q, errors.Is %v", found, err, errors.Is(err, target))
		}
	}
}

// TestWalkAsErrorsAs: through views, a visit function's type switch meets
// the errors errors.As meets.
func TestWalkAsErrorsAs(t *testing.T) {
	err := fmt.Errorf("a: %w", viewOf{err: io.EOF, next: []error{viewOf{err: named("inner"), next: nil}}})
	var found named
	Walk(err, func(err error) Step {
		if n, ok := err.(named); ok {
			found = n
			return Stop
		}
		return Continue
	})
	var as named
	if !errors.As(err, &as) || found != as || found != "inner" {
		t.Errorf("Walk found %q, errors.As %q; want both %q", found, as, "inner")
	}
}

var sink bool

func stopAtEOF(err error) Step {
	if err == io.EOF {
		return Stop
	}
	return Continue
}

func TestWalkAllocations(t *testing.T) {
	err := fmt.Errorf("a: %w", errors.Join(errors.New("b"), wraps{io.EOF}))
	if n := testing.AllocsPerRun(100, func() { sink = Walk(err, stopAtEOF) }); n != 0 || !sink {
		t.Errorf("Walk: %v allocations, found %v; want 0, true", n, sink)
	}
	var viewed error = wraps{viewOf{err: errors.New("shown"), next: []error{viewOf{err: io.EOF}}}}
	if n := testing.AllocsPerRun(100, func() { sink = Walk(viewed, stopAtEOF) }); n != 0 || !sink {
		t.Errorf("Walk through views: %v allocations, found %v; want 0, true", n, sink)
	}
	count := 0
	if n := testing.AllocsPerRun(100, func() {
		Walk(err, func(error) Step { count++; return Continue })
	}); n != 0 {
		t.Errorf("Walk with a closure: %v allocations, want 0", n)
	}
}

func TestIsPlain(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{errors.New("x"), true},
		{fmt.Errorf("x %d", 1), true},
		{fmt.Errorf("x: %w", io.EOF), false},
		{named("x"), false},
		{nil, false},
	} {
		if got := IsPlain(tt.err); got != tt.want {
			t.Errorf("IsPlain(%#v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

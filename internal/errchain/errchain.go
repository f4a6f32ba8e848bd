// Package errchain walks an error's chain, the one walk of the module's
// classifiers (the root's Retryable, Retried and RetryAfter, backoffhttp's
// and backoffsql's): it does not allocate, takes visit functions that stop
// it or keep it out of what an error wraps, and sees through views (the
// root's *Error shows an inner loop's *Error through one) as errors.As does.
package errchain

import (
	"errors"
	"reflect"
)

// Step is a visit function's answer: where [Walk] goes next.
type Step uint8

const (
	// Continue goes into what the visited error wraps, then on.
	Continue Step = iota
	// Skip goes on, but not into what the visited error wraps.
	Skip
	// Stop ends the walk.
	Stop
)

// Walk calls visit with err and then with each error in its chain, in the
// order errors.Is visits them: pre-order, depth first, through a method
// Unwrap() error or Unwrap() []error (in that order of preference), skipping
// nil errors. A view (see [Viewer]) is visited as the error it shows, and
// then its own Unwrap is followed, so visit meets the errors errors.As
// meets. It reports whether visit returned [Stop]. A nil err is not
// visited. Walk does not allocate unless visit or an Unwrap method does.
func Walk(err error, visit func(error) Step) bool {
	for err != nil {
		shown := err
		if v, ok := err.(view); ok {
			shown = v.Shown()
		}
		switch visit(shown) {
		case Stop:
			return true
		case Skip:
			return false
		}
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if Walk(inner, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Viewer, embedded in an error type that has a method Shown() error, makes
// it a view: an error that shows another one, the one Shown returns, to
// errors.Is and errors.As as that error itself (through its own Is and As
// methods), with a chain of its own (its Unwrap), made of views too. [Walk]
// visits the shown error in a view's place, then follows the view's
// Unwrap. Only this module's types can embed Viewer, being internal.
type Viewer struct{}

func (Viewer) viewer() {}

// view is an error type that embeds Viewer.
type view interface {
	Shown() error
	viewer()
}

// IsPlain reports whether err is of errors.New's type, as fmt.Errorf's
// errors without %w are: the most common errors, which wrap nothing and say
// nothing but their text. It inlines to a comparison of types, with
// errors.ErrUnsupported's (made by errors.New), and needs no init.
func IsPlain(err error) bool { return reflect.TypeOf(err) == reflect.TypeOf(errors.ErrUnsupported) }

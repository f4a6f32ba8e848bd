package decided

import (
	"errors"
	"fmt"
	"testing"
)

type failure struct{ told int }

func (f *failure) Error() string      { return "failure" }
func (f *failure) RetryDecided(Token) { f.told++ }

// TestTell: Tell tells a Failure once per call, and neither an error that
// wraps one nor any other error.
func TestTell(t *testing.T) {
	f := &failure{}
	Tell(f)
	Tell(fmt.Errorf("wrapped: %w", f))
	Tell(errors.New("plain"))
	Tell(nil)
	if f.told != 1 {
		t.Errorf("told %d times; want 1", f.told)
	}
}

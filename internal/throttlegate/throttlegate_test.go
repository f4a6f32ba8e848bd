package throttlegate

import (
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// failure is a Failure of target that counts its refusals.
type failure struct {
	target  string
	refused int
}

func (f *failure) Error() string          { return "failure" }
func (f *failure) ThrottleTarget() string { return f.target }
func (f *failure) ThrottleRefused()       { f.refused++ }

// TestPolicy: the loop's Policy decides first; a retry it allows is asked
// of the Throttle for the failure's target ("" for an error that names
// none), and a refusal stops with throttle.ErrThrottled and tells the
// failure. A Sequencer's sequence is gated too; a Policy without one is
// its own sequence.
func TestPolicy(t *testing.T) {
	th := backoff.Must(throttle.New(throttle.Config{}, backoff.NewSeededRng(1)))
	for range 10000 { // "down" and "" rejected everything: p ≈ 1 − 1e-4
		th.Record("down", false)
		th.Record("", false)
	}
	dec := backoff.Must(backoff.NewDecorrelated(backoff.Config{Base: time.Millisecond, Cap: time.Second, MaxAttempts: 3}, backoff.NewSeededRng(1)))
	g := &Policy{Policy: dec, Throttle: th}
	seq := g.NewSequence()
	if p, ok := seq.(*Policy); !ok || p == g || p.Throttle != th {
		t.Fatalf("NewSequence() = %#v, want a gated sequence of its own", seq)
	}
	up, down := &failure{target: "up"}, &failure{target: "down"}
	for _, tc := range []struct {
		attempt int
		err     error
		want    error
	}{
		{1, up, nil},
		{3, up, backoff.ErrExhausted}, // the Policy's stop comes first
		{1, down, throttle.ErrThrottled},
		{1, errors.New("plain"), throttle.ErrThrottled},
	} {
		if d, reason := seq.NextDelay(tc.attempt, tc.err); reason != tc.want || reason != nil && d != 0 {
			t.Errorf("NextDelay(%d, %v) = %v, %v; want the reason %v", tc.attempt, tc.err, d, reason, tc.want)
		}
	}
	if up.refused != 0 || down.refused != 1 {
		t.Errorf("ThrottleRefused called %d times on up, %d on down; want 0, 1", up.refused, down.refused)
	}
	plain := &Policy{Policy: backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil }), Throttle: th}
	if plain.NewSequence() != backoff.Policy(plain) {
		t.Error("NewSequence of a Policy without sequences is not the Policy itself")
	}
}

package throttle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// failure is an attempt's failure at target.
type failure struct{ target string }

func (f *failure) Error() string { return "failure at " + f.target }

// TestGate: the loop's Policy decides first; a retry it allows is asked of
// the Throttle for Target(err) ("" with a nil Target), and a refusal stops
// with throttle.ErrThrottled and calls Refused(err). A Sequencer's sequence
// is gated too; a Policy without one is its own sequence.
func TestGate(t *testing.T) {
	th := backoff.Must(throttle.New(throttle.Config{}, backoff.NewSeededRng(1)))
	for range 10000 { // "down" and "" rejected everything: p ≈ 1 − 1e-4
		th.Record("down", false)
		th.Record("", false)
	}
	dec := backoff.Must(backoff.NewDecorrelated(backoff.Config{Base: time.Millisecond, Cap: time.Second, MaxAttempts: 3}, backoff.NewSeededRng(1)))
	var refused []error
	target := func(err error) string {
		if f, ok := err.(*failure); ok {
			return f.target
		}
		return ""
	}
	g := &throttle.Gate{Policy: dec, Throttle: th, Target: target, Refused: func(err error) { refused = append(refused, err) }}
	seq := g.NewSequence()
	if p, ok := seq.(*throttle.Gate); !ok || p == g || p.Throttle != th || p.Target == nil || p.Refused == nil {
		t.Fatalf("NewSequence() = %#v, want a Gate of a sequence of its own", seq)
	}
	up, down, plain := &failure{"up"}, &failure{"down"}, errors.New("plain")
	for _, tc := range []struct {
		attempt int
		err     error
		want    error
	}{
		{1, up, nil},
		{3, up, backoff.ErrExhausted}, // the Policy's stop comes first
		{1, down, throttle.ErrThrottled},
		{1, plain, throttle.ErrThrottled},
	} {
		if d, reason := seq.NextDelay(tc.attempt, tc.err); reason != tc.want || reason != nil && d != 0 {
			t.Errorf("NextDelay(%d, %v) = %v, %v; want the reason %v", tc.attempt, tc.err, d, reason, tc.want)
		}
	}
	if len(refused) != 2 || refused[0] != down || refused[1] != plain {
		t.Errorf("Refused called with %v, want [down plain]", refused)
	}
	bare := &throttle.Gate{Policy: backoff.PolicyFunc(func(int, error) (time.Duration, error) { return 0, nil }), Throttle: th}
	if bare.NewSequence() != backoff.Policy(bare) {
		t.Error("NewSequence of a Policy without sequences is not the Gate itself")
	}
	if _, reason := bare.NextDelay(1, up); reason != throttle.ErrThrottled {
		t.Errorf("a Gate without Target nor Refused: reason %v, want ErrThrottled (the target \"\")", reason)
	}
}

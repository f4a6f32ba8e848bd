// Command byhand is withbackoff's loop written by hand with math/rand/v2 and
// time.NewTimer: the floor that scripts/importcost compares the library with.
package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

func main() {
	ctx := context.Background()
	base, cap, maxAttempts := time.Millisecond, 10*time.Millisecond, 3
	calls := 0
	fn := func(context.Context) error {
		if calls++; calls < 2 {
			return errors.New("transient")
		}
		return nil
	}
	var err error
	var timer *time.Timer
	for attempt := 1; ; attempt++ {
		if err = fn(ctx); err == nil || attempt >= maxAttempts {
			break
		}
		c := min(cap, base<<(attempt-1))
		d := time.Duration(rand.Int64N(int64(c) + 1))
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	println(calls, err == nil)
}

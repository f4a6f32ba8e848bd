// Command withbackoff builds a FullJitter policy and calls backoff.Do once:
// the smallest real use of the library, for scripts/importcost.
package main

import (
	"context"
	"errors"
	"time"

	"github.com/backoffgo/backoff"
)

func main() {
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: time.Millisecond, Cap: 10 * time.Millisecond, MaxAttempts: 3,
	}, backoff.RuntimeRng{}))
	calls := 0
	err := backoff.Do(context.Background(), func(context.Context) error {
		if calls++; calls < 2 {
			return errors.New("transient")
		}
		return nil
	}, policy)
	println(calls, err == nil)
}

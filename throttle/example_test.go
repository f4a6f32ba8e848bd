package throttle_test

import (
	"errors"
	"fmt"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
)

// A backend answered 100 requests, then starts rejecting all of them.
// Retries go through until the requests reach K = 2 times the accepts;
// from then on more and more are rejected locally, never all: some still
// probe the backend.
func Example() {
	th := backoff.Must(throttle.New(throttle.Config{}, backoff.NewSeededRng(1)))
	for range 100 {
		if th.Allow("db", false) == nil {
			th.Record("db", true)
		}
	}
	sent := 0
	for range 1000 {
		if err := th.Allow("db", true); errors.Is(err, throttle.ErrThrottled) {
			continue
		}
		sent++
		th.Record("db", false) // an overload answer
	}
	fmt.Println(sent, "of 1000 retries sent")
	// Another target has a window of its own.
	fmt.Println(th.Allow("cache", true))
	// Output:
	// 438 of 1000 retries sent
	// <nil>
}

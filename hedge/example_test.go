package hedge_test

import (
	"fmt"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
)

// A client keeps one Delay per target, observes the latency of every
// successful attempt, and sends a hedge once a request has been
// outstanding for the delay Hedge gives: here the p95 of 1 ms, 2 ms, ...,
// 100 ms, to the bucket's resolution (95 ms ≤ delay ≤ 95 ms + 1/8).
func Example() {
	d := backoff.Must(hedge.NewDelay(hedge.Config{MaxExtraLoad: 0.05}))
	_, ok := d.Hedge()
	fmt.Println("before any sample:", ok)
	for i := 1; i <= 100; i++ {
		d.Observe(time.Duration(i) * time.Millisecond)
	}
	delay, ok := d.Hedge()
	fmt.Println("after 100:", delay.Round(time.Microsecond), ok)
	// Output:
	// before any sample: false
	// after 100: 100.663ms true
}

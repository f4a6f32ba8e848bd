package retryshare_test

import (
	"fmt"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// A server records every incoming request with its route and its caller,
// a retry when the request says it is one (an HTTP attempt count of 2 or
// more, a gRPC grpc-previous-rpc-attempts header), and asks Refuse for
// each failing answer. A burst of 100 requests to a failing route, none of
// them a retry yet: a tenth of the failing answers may be retried, and the
// allowance of 4 that the route started with (less the fraction it ends
// with); the others tell their callers not to retry.
func Example() {
	share := backoff.Must(retryshare.New(retryshare.Config{}))
	invited := 0
	for i := range 100 {
		caller := fmt.Sprintf("client-%d", i)
		share.Record("/orders", caller, false)
		if !share.Refuse("/orders", caller) {
			invited++
		}
	}
	fmt.Println(invited, "of 100 failing answers may be retried")
	// Another route has a window of its own.
	share.Record("/health", "client-0", false)
	fmt.Println(share.Refuse("/health", "client-0"))
	// Output:
	// 13 of 100 failing answers may be retried
	// false
}

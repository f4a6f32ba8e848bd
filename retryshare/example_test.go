package retryshare_test

import (
	"fmt"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// A server counts every incoming request, a retry when the request says it
// is one (an HTTP attempt count of 2 or more, a gRPC
// grpc-previous-rpc-attempts header), and tells its callers not to retry its
// failures while retries are more than a tenth of what it receives.
func Example() {
	share := backoff.Must(retryshare.New(retryshare.Config{}))
	for i := range 20 {
		share.Record(i%10 == 0) // 2 retries in 20 requests: 10 %
	}
	fmt.Println(share.Over())
	share.Record(true) // 3 in 21
	fmt.Println(share.Over())
	// Output:
	// false
	// true
}

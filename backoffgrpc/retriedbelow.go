package backoffgrpc

import (
	"github.com/backoffgo/backoff"
	"google.golang.org/grpc/status"
)

// belowError is the failure of an attempt whose server said not to retry it,
// or, committed, that grpc-go's own retries had retried before: it reads as
// that failure and has its status, and it also matches
// backoff.ErrRetriedBelow, so that a loop around the call and a server
// interceptor above stand back from it, committed or not.
type belowError struct {
	chain [2]error // the failure, and backoff.ErrRetriedBelow
}

func (e *belowError) Error() string   { return e.chain[0].Error() }
func (e *belowError) Unwrap() []error { return e.chain[:] }

// GRPCStatus is the failure's status.
func (e *belowError) GRPCStatus() *status.Status { return status.Convert(e.chain[0]) }

// belowFailure returns err, the failure of an attempt whose server said not
// to retry it (or a committed one that grpc-go retried), as a belowError.
func belowFailure(err error) error {
	return &belowError{chain: [2]error{err, backoff.ErrRetriedBelow}}
}

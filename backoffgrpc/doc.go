// Package backoffgrpc retries gRPC calls with the policies of package
// backoff, and makes a chain of gRPC services retry at one layer only.
//
// A [Client]'s interceptors retry unary calls and streams until the server
// has answered (response headers or a message), after UNAVAILABLE, or
// RESOURCE_EXHAUSTED with a pushback, with the metadata of gRFC A6:
//
//	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{})
//	conn, err := grpc.NewClient(target, append(c.DialOptions(), creds)...)
//
// With ClientConfig.Hedging, unary calls are hedged instead, as gRFC A6's
// hedgingPolicy: a copy after a delay, or at once after a failure to
// retry; the first success wins and the other copies are cancelled.
//
// Every failure of a call is its loop's *[backoff.Error], whose status for
// status.Code and status.FromError is the last attempt's, or the context's.
// [UnaryServerInterceptor] and [StreamServerInterceptor] answer a retry
// loop's give-up, and a failure that their retryshare.Share refuses (too
// many of the method's calls are retries), with grpc-retry-pushback-ms:
// -1, which a Client and grpc-go's own retries do not retry.
//
// The reasons, the comparison with grpc-go's retryPolicy and the details:
// https://github.com/backoffgo/backoff/blob/main/docs/grpc.md
package backoffgrpc

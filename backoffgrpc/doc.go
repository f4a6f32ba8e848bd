// Package backoffgrpc retries gRPC calls with the policies of package
// backoff, and makes a chain of gRPC services retry at one layer only.
//
// A [Client] supplies the client interceptors: unary calls and streams are
// retried while the server cannot have answered them (no response headers
// yet), after UNAVAILABLE, or RESOURCE_EXHAUSTED with the server's
// pushback, honouring grpc-retry-pushback-ms and sending
// grpc-previous-rpc-attempts, as gRFC A6 specifies for grpc-go's own
// retries:
//
//	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{})
//	conn, err := grpc.NewClient(target, append(c.DialOptions(), creds)...)
//
// [UnaryServerInterceptor] and [StreamServerInterceptor] answer a failure
// whose error is, or wraps, a retry loop's give-up with
// grpc-retry-pushback-ms: -1, which a Client, and grpc-go's built-in
// retries, do not retry.
package backoffgrpc

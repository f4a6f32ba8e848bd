package backoffgrpc

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
)

// On a channel whose service config gives a method a retryPolicy, grpc-go
// may retry a call of it below the interceptors. To tell whether it did, a
// Client adds to such a call (and to any call while the channel's service
// config may not be known: see needsCounter) per-RPC credentials of its
// own, an attemptCounter, which count the attempts: grpc-go asks a call's
// credentials for their metadata once per attempt that reaches a
// connection, its transparent retries included. The counter wraps the
// credentials the caller passed, which grpc would otherwise drop (it keeps
// the last PerRPCCredsCallOption of a call).

// attemptCounter is the per-RPC credentials that count grpc-go's attempts
// of one call, and otherwise act as the caller's credentials (none when
// inner is nil).
type attemptCounter struct {
	inner  credentials.PerRPCCredentials // the caller's; nil for none
	policy bool                          // the method had a retryPolicy when the call (a stream: this attempt) began
	n      atomic.Int32                  // the attempts that asked for metadata
}

func (a *attemptCounter) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	a.n.Add(1)
	if a.inner == nil {
		return nil, nil
	}
	return a.inner.GetRequestMetadata(ctx, uri...)
}

func (a *attemptCounter) RequireTransportSecurity() bool {
	return a.inner != nil && a.inner.RequireTransportSecurity()
}

// retriedOn reports whether grpc-go retried the call of method on cc: it
// made more than one attempt of it, and cc's service config gave method a
// retryPolicy when the call began (grpc-go retries under the method config
// it read then), or gives it one now (the config was not known then). A
// nil counter, for a call that has none, reports false.
func (a *attemptCounter) retriedOn(cc *grpc.ClientConn, method string) bool {
	return a != nil && a.n.Load() > 1 && (a.policy || builtinRetries(cc, method))
}

// needsCounter reports whether a call of method on cc needs an
// attemptCounter: cc's service config gives method a retryPolicy, which
// policy reports, or cc is idle or connecting, when its service config may
// not be known yet (a new channel has none until its resolver answers).
func needsCounter(cc *grpc.ClientConn, method string) (need, policy bool) {
	if cc == nil {
		return false, false
	}
	if builtinRetries(cc, method) {
		return true, true
	}
	switch cc.GetState() {
	case connectivity.Idle, connectivity.Connecting:
		return true, false
	}
	return false, false
}

// builtinRetries reports whether cc's service config gives method a
// retryPolicy, under which grpc-go's own retries may retry its calls.
func builtinRetries(cc *grpc.ClientConn, method string) bool {
	return cc.GetMethodConfig(method).RetryPolicy != nil
}

// callerCreds returns the per-RPC credentials that opts give a call: those
// of the last PerRPCCredsCallOption, as grpc uses them; nil for none.
func callerCreds(opts []grpc.CallOption) credentials.PerRPCCredentials {
	for i := len(opts) - 1; i >= 0; i-- {
		switch o := opts[i].(type) {
		case grpc.PerRPCCredsCallOption:
			return o.Creds
		case *grpc.PerRPCCredsCallOption:
			if o != nil {
				return o.Creds
			}
		}
	}
	return nil
}

package backoffgrpc

import (
	"context"

	"github.com/backoffgo/backoff/internal/hop"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ServerConfig holds the parameters of the server interceptors. Its zero
// value is ready to use.
type ServerConfig struct {
	// Share, when not nil, counts every call the interceptor serves, a call
	// with PreviousAttemptsKey as a retry; while Share.Over reports true,
	// every failing status says not to retry, as one whose handler's loops
	// retried does. Use one Share per server (or per method).
	Share *retryshare.Share
}

// dontRetry is the trailer by which a failing status says not to retry.
var dontRetry = metadata.Pairs(PushbackKey, "-1")

// UnaryServerInterceptor returns an interceptor that makes a chain of
// services retry at one layer. The call's context tells every retry loop
// that the handler runs with it ([backoff.Do], a [backoff.Retrier], a
// [Client]'s interceptors); when one of them gives up after retrying,
// stands back from an inner give-up, or is refused by its budget, or when
// a [Client] of the handler was told not to retry, or when cfg.Share is
// over its threshold, the handler's failing status carries the trailer
// PushbackKey: "-1". A [Client] does not retry it ([backoff.ErrRetriedBelow]
// is the reason it stops), nor do grpc-go's own retries, which read it in a
// Trailers-Only response: the one grpc-go's server sends for a handler
// that fails before sending or setting any header. A success is never
// marked.
func UnaryServerInterceptor(cfg ServerConfig) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, m := enter(ctx, cfg.Share)
		resp, err := handler(ctx, req)
		if err != nil && stop(m, cfg.Share) {
			grpc.SetTrailer(ctx, dontRetry)
		}
		return resp, err
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streams: the
// handler's stream has the marked context, and a failing status says not
// to retry under the same conditions.
func StreamServerInterceptor(cfg ServerConfig) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, m := enter(ss.Context(), cfg.Share)
		err := handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
		if err != nil && stop(m, cfg.Share) {
			ss.SetTrailer(dontRetry)
		}
		return err
	}
}

// enter counts the call in share, when not nil, and returns its context
// with a hop marker.
func enter(ctx context.Context, share *retryshare.Share) (context.Context, *hop.Marker) {
	if share != nil {
		share.Record(len(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)) > 0)
	}
	return hop.With(ctx)
}

// stop reports whether a failing status should say not to retry.
func stop(m *hop.Marker, share *retryshare.Share) bool {
	return m.Marked() || share != nil && share.Over()
}

// serverStream is a grpc.ServerStream with the interceptor's context.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }

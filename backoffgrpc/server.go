package backoffgrpc

import (
	"context"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ServerConfig configures the server interceptors. Its zero value is ready
// to use.
type ServerConfig struct {
	// Share counts the calls served, retries apart (a call that carries
	// PreviousAttemptsKey). Nil means a new Share with retryshare's
	// defaults, made by each interceptor; one Share may count the calls of
	// several interceptors. A Share whose Threshold is 1 is never over: its
	// failing answers are not marked.
	Share *retryshare.Share
}

// dontRetry is the trailer by which a failing status says not to retry.
var dontRetry = metadata.Pairs(PushbackKey, "-1")

// UnaryServerInterceptor returns an interceptor that makes a chain of
// services retry at one layer: the handler's failing status carries the
// trailer PushbackKey: "-1" when its error is or wraps (%w) a give-up that
// [backoff.Retried] reports (a [Client]'s failure whose server said not to
// retry is one), not one the handler absorbed or a status made from its
// text, or while the Share is over. A success is never marked. The answer
// is Trailers-Only, which grpc-go's own retries read, unless the handler
// set or sent a header.
func UnaryServerInterceptor(cfg ServerConfig) grpc.UnaryServerInterceptor {
	share := serverShare(cfg)
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		count(ctx, share)
		resp, err := handler(ctx, req)
		if stop(err, share) {
			grpc.SetTrailer(ctx, dontRetry)
		}
		return resp, err
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streams, read
// from the error the handler returns.
func StreamServerInterceptor(cfg ServerConfig) grpc.StreamServerInterceptor {
	share := serverShare(cfg)
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		count(ss.Context(), share)
		err := handler(srv, ss)
		if stop(err, share) {
			ss.SetTrailer(dontRetry)
		}
		return err
	}
}

// serverShare returns cfg's Share, or a new one of retryshare's defaults.
func serverShare(cfg ServerConfig) *retryshare.Share {
	if cfg.Share != nil {
		return cfg.Share
	}
	return backoff.Must(retryshare.New(retryshare.Config{})) // the defaults are valid
}

// count counts the call in share.
func count(ctx context.Context, share *retryshare.Share) {
	share.Record(len(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)) > 0)
}

// stop reports whether the handler's result err is a failure that should
// say not to retry.
func stop(err error, share *retryshare.Share) bool {
	return err != nil && (backoff.Retried(err) || share.Over())
}

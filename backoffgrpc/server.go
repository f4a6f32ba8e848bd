package backoffgrpc

import (
	"context"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ServerConfig holds the parameters of the server interceptors. Its zero
// value is ready to use.
type ServerConfig struct {
	// Share counts every call the interceptor serves, a call with
	// PreviousAttemptsKey as a retry; while Share.Over reports true, every
	// failing status says not to retry, as a give-up's does. Nil means a
	// new Share of retryshare's defaults for each interceptor made with
	// this ServerConfig: don't retry while more than 10 % of the last 10
	// seconds' calls (and at least 2) were retries. A Share whose
	// Threshold is 1 counts nothing that stops a retry.
	Share *retryshare.Share
}

// dontRetry is the trailer by which a failing status says not to retry.
var dontRetry = metadata.Pairs(PushbackKey, "-1")

// UnaryServerInterceptor returns an interceptor that makes a chain of
// services retry at one layer: the handler's failing status carries the
// trailer PushbackKey: "-1" when its error is, or wraps (%w), the give-up
// of a retry loop that retried or whose budget refused a retry
// ([backoff.Retried]; a [Client]'s call whose server said not to
// retry is one), or when cfg.Share is over its threshold. A give-up the handler absorbed, a loop still retrying, or a
// status made from a give-up's text (status.Convert(err).Err()) does not
// mark it; fmt.Errorf("%w: %w", status.Error(code, msg), err) keeps both a
// status of the handler's choosing and the give-up. A [Client] does not
// retry a marked failure ([backoff.ErrRetriedBelow]), nor do grpc-go's own
// retries, which read it in a Trailers-Only response: the one grpc-go's
// server sends for a handler that fails before sending or setting any
// header. A success is never marked.
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

// StreamServerInterceptor is [UnaryServerInterceptor] for streams: a
// failing status says not to retry under the same conditions, read from
// the error the handler returns.
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

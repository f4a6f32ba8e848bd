package backoffgrpc

import (
	"context"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// ServerConfig configures the server interceptors. Its zero value is ready
// to use.
type ServerConfig struct {
	// Share counts the calls, per method (the route: the full method
	// name) and per caller, retries apart (a call that carries
	// PreviousAttemptsKey), decides which failures say not to retry, and
	// which retries are refused as they arrive. Nil means a new Share with
	// retryshare's defaults, made by each interceptor; one Share may count
	// the calls of several interceptors. A Share whose Threshold is 1
	// never refuses: it marks no failure and refuses no retry.
	Share *retryshare.Share
	// Caller returns the key of a call's caller, from the call's context.
	// Nil means the peer's address (peer.FromContext): the connection.
	Caller func(ctx context.Context) string
}

// dontRetry is the trailer by which a failing status says not to retry.
var dontRetry = metadata.Pairs(PushbackKey, "-1")

// UnaryServerInterceptor returns an interceptor that makes a chain of
// services retry at one layer: the handler's failing status carries the
// trailer PushbackKey: "-1" when its error is or wraps (%w) a give-up that
// [backoff.Retried] reports (a [Client]'s failure whose server said not to
// retry is one), not one the handler absorbed or a status made from its
// text, or when it is UNAVAILABLE or RESOURCE_EXHAUSTED (what a Client may
// retry) and the Share's Refuse says so (a RESOURCE_EXHAUSTED that Refuse
// lets through is taken from the method's allowance even without a
// pushback, which a Client needs to retry it). Each call is recorded in
// the Share when it arrives; a retry whose caller's retries are over on
// its method (the Share's Admit says false) is refused then, before the
// handler runs: UNAVAILABLE with PushbackKey: "-1", counted by Admit (a
// retry of the method, not one of its calls nor a failure). A first try is never refused so. A success
// is never marked. The answer is
// Trailers-Only, which grpc-go's own retries read, unless the handler set
// or sent a header.
func UnaryServerInterceptor(cfg ServerConfig) grpc.UnaryServerInterceptor {
	s := newServer(cfg)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		caller, err := s.admit(ctx, info.FullMethod)
		if err != nil {
			grpc.SetTrailer(ctx, dontRetry)
			return nil, err
		}
		resp, err := handler(ctx, req)
		if s.stop(err, info.FullMethod, caller) {
			grpc.SetTrailer(ctx, dontRetry)
		}
		return resp, err
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streams, read
// from the error the handler returns.
func StreamServerInterceptor(cfg ServerConfig) grpc.StreamServerInterceptor {
	s := newServer(cfg)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		caller, err := s.admit(ss.Context(), info.FullMethod)
		if err != nil {
			ss.SetTrailer(dontRetry)
			return err
		}
		err = handler(srv, ss)
		if s.stop(err, info.FullMethod, caller) {
			ss.SetTrailer(dontRetry)
		}
		return err
	}
}

// server is what the interceptors of one ServerConfig share.
type server struct {
	share  *retryshare.Share
	caller func(context.Context) string
}

// newServer returns cfg's server: its Share, or a new one of retryshare's
// defaults, and its Caller, or the peer's address.
func newServer(cfg ServerConfig) server {
	s := server{share: cfg.Share, caller: cfg.Caller}
	if s.share == nil {
		s.share = backoff.Must(retryshare.New(retryshare.Config{})) // the defaults are valid
	}
	if s.caller == nil {
		s.caller = peerAddr
	}
	return s
}

// peerAddr returns the address of the call's peer, "" if ctx has none.
func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// errRefused is the status of a retry refused as it arrives.
var errRefused = status.Error(codes.Unavailable, "retry refused: too many of this method's calls are retries")

// admit records the call of method in the share and returns its caller,
// or returns errRefused for a retry that the share does not admit (and
// counts so).
func (s server) admit(ctx context.Context, method string) (string, error) {
	caller := s.caller(ctx)
	retry := len(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)) > 0
	if retry && !s.share.Admit(method, caller) {
		return caller, errRefused // Admit counted it
	}
	s.share.Record(method, caller, retry)
	return caller, nil
}

// stop reports whether the handler's result err is a failure that should
// say not to retry.
func (s server) stop(err error, method, caller string) bool {
	if err == nil {
		return false
	}
	if backoff.Retried(err) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted:
		return s.share.Refuse(method, caller)
	}
	return false
}

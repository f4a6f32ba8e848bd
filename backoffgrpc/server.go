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
	// Share counts the calls served, per method (the route: the full
	// method name) and per caller, retries apart (a call that carries
	// PreviousAttemptsKey), and decides which failures say not to retry.
	// Nil means a new Share with retryshare's defaults, made by each
	// interceptor; one Share may count the calls of several interceptors.
	// A Share whose Threshold is 1 never refuses: its failures are not
	// marked.
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
// pushback, which a Client needs to retry it). Each call is recorded in the Share when it
// arrives. A success is never marked. The answer is
// Trailers-Only, which grpc-go's own retries read, unless the handler set
// or sent a header.
func UnaryServerInterceptor(cfg ServerConfig) grpc.UnaryServerInterceptor {
	s := newServer(cfg)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		caller := s.count(ctx, info.FullMethod)
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
		caller := s.count(ss.Context(), info.FullMethod)
		err := handler(srv, ss)
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

// count records the call of method in the share and returns its caller.
func (s server) count(ctx context.Context, method string) string {
	caller := s.caller(ctx)
	s.share.Record(method, caller, len(metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)) > 0)
	return caller
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

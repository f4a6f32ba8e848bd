package backoffgrpc

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// unaryCall is the state of one unary call. Its header and trailer are
// filled by grpc for each attempt through the call options in opts, so it
// is pooled: a call that succeeds allocates nothing for it.
type unaryCall struct {
	c          *Client
	cc         *grpc.ClientConn
	method     string
	req, reply any
	invoker    grpc.UnaryInvoker
	builtinOff bool
	attempts   int

	header, trailer metadata.MD
	opts            []grpc.CallOption // the caller's, then Header and Trailer
}

var unaryCalls = sync.Pool{New: func() any { return new(unaryCall) }}

func (c *Client) unary(builtinOff bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		u := unaryCalls.Get().(*unaryCall)
		u.c, u.cc, u.method, u.req, u.reply, u.invoker, u.builtinOff = c, cc, method, req, reply, invoker, builtinOff
		u.opts = append(append(u.opts[:0], opts...), grpc.Header(&u.header), grpc.Trailer(&u.trailer))
		err := c.retrier.Do(ctx, u.attempt)
		err = c.result(ctx, u.attempts, err)
		clear(u.opts) // the caller's options are not kept alive by the pool
		*u = unaryCall{opts: u.opts[:0]}
		unaryCalls.Put(u)
		return err
	}
}

// attempt makes one attempt of the call.
func (u *unaryCall) attempt(ctx context.Context) error {
	u.attempts++
	actx := attemptContext(ctx, u.attempts)
	var cancel context.CancelFunc
	var deadline time.Time
	if d := u.c.attemptTimeout; d > 0 && !deadlineWithin(ctx, d) {
		actx, cancel = context.WithTimeout(actx, d)
		deadline, _ = actx.Deadline()
	}
	u.header, u.trailer = nil, nil
	err := u.invoker(actx, u.method, u.req, u.reply, u.cc, u.opts...)
	timeout := false
	if cancel != nil {
		// The server's answer to the deadline may come before actx's
		// timer has run: the clock says so too.
		timeout = err != nil && ctx.Err() == nil && (actx.Err() != nil || !time.Now().Before(deadline))
		cancel()
	}
	if err == nil {
		return nil
	}
	// grpc fills the header only when the server sent response headers
	// (not for a Trailers-Only answer): the call is then committed.
	return u.c.failure(ctx, u.cc, u.method, err, u.trailer, u.header != nil, timeout, u.builtinOff)
}

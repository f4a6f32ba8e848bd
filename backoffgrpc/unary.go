package backoffgrpc

import (
	"cmp"
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// unaryCall is the state of one unary call. grpc fills each attempt's
// header and trailer through the call options in opts: the caller's own
// grpc.Header and grpc.Trailer when it passed them, else the ones that fill
// header and trailer here; so it is pooled: a call that succeeds allocates
// nothing for it.
type unaryCall struct {
	c          *Client
	cc         *grpc.ClientConn
	method     string
	req, reply any
	invoker    grpc.UnaryInvoker
	attempts   int
	failed     *attemptError // the last attempt's failure
	start      time.Time     // the first attempt's, when the Retrier has a MaxElapsed

	header, trailer         metadata.MD
	headerAddr, trailerAddr *metadata.MD      // what grpc fills: the caller's, or &header and &trailer
	opts                    []grpc.CallOption // the caller's, then own's Header and Trailer unless the caller's, and own's counter
	nopts                   int               // the caller's options in opts

	// counter counts grpc-go's attempts of each of ours when needsCounter:
	// it is &count then, nil otherwise.
	counter *attemptCounter
	count   attemptCounter

	// own holds the options that fill header and trailer and that count
	// with count, made once per pooled value: grpc.Header(&header),
	// grpc.Trailer(&trailer), grpc.PerRPCCredentials(&count).
	own *[3]grpc.CallOption

	peer peer.Peer // what grpc.Peer fills for a hedge
}

var unaryCalls = sync.Pool{New: func() any { return new(unaryCall) }}

func (c *Client) unary(builtinOff bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		u := unaryCalls.Get().(*unaryCall)
		if u.own == nil {
			u.own = &[3]grpc.CallOption{grpc.Header(&u.header), grpc.Trailer(&u.trailer), grpc.PerRPCCredentials(&u.count)}
		}
		u.c, u.cc, u.method, u.req, u.reply, u.invoker = c, cc, method, req, reply, invoker
		u.opts, u.nopts = append(u.opts[:0], opts...), len(opts)
		u.headerAddr, u.trailerAddr = callerMD(opts, false)
		if u.headerAddr == nil {
			u.headerAddr, u.opts = &u.header, append(u.opts, u.own[0])
		}
		if u.trailerAddr == nil {
			u.trailerAddr, u.opts = &u.trailer, append(u.opts, u.own[1])
		}
		if !builtinOff {
			if need, policy := needsCounter(cc, method); need {
				u.counter, u.count.inner, u.count.policy = &u.count, callerCreds(opts), policy
				u.opts = append(u.opts, u.own[2])
			}
		}
		if c.retrier.MaxElapsed > 0 {
			u.start = time.Now()
		}
		var err error
		attempts := 0
		if c.hedging != nil && hedgeable(reply) {
			attempts, err = u.hedged(ctx)
		} else {
			err = c.retrier.Do(ctx, u.attempt)
			attempts = u.attempts
		}
		if err != nil || c.onDone != nil {
			err = c.result(ctx, u.start, attempts, err)
		}
		clear(u.opts) // the caller's options are not kept alive by the pool
		*u = unaryCall{opts: u.opts[:0], own: u.own}
		unaryCalls.Put(u)
		return err
	}
}

// attempt makes one attempt of the call, if the Throttle allows it.
func (u *unaryCall) attempt(ctx context.Context) error {
	if err := u.c.allow(u.cc, u.attempts+1); err != nil {
		return err
	}
	return u.invoke(ctx)
}

// invoke makes one attempt of the call, which the Throttle allowed, and
// records its outcome: nil or an *attemptError.
func (u *unaryCall) invoke(ctx context.Context) error {
	u.attempts++
	actx := attemptContext(ctx, u.attempts)
	var cancel context.CancelFunc
	var deadline time.Time
	if d := u.c.attemptTimeout; d > 0 && !deadlineWithin(ctx, d) {
		actx, cancel = context.WithTimeout(actx, d)
		deadline, _ = actx.Deadline()
	}
	// grpc fills them only for an attempt that reached a server: a retry
	// that reaches none leaves the caller none, in all its options.
	if u.attempts > 1 && (u.headerAddr != &u.header || u.trailerAddr != &u.trailer) {
		callerMD(u.opts, true)
	}
	*u.headerAddr, *u.trailerAddr = nil, nil
	if u.counter != nil {
		u.counter.n.Store(0)
	}
	err := u.invoker(actx, u.method, u.req, u.reply, u.cc, u.opts...)
	timeout := false
	if cancel != nil {
		// The server's answer to the deadline may come before actx's
		// timer has run: the clock says so too. Any other code is an
		// answer that came before the deadline.
		timeout = timeoutCode(err, false) && ctx.Err() == nil && (actx.Err() != nil || !time.Now().Before(deadline))
		cancel()
	}
	if err == nil {
		u.c.record(u.cc, nil)
		return nil
	}
	// grpc fills the header only when the server sent response headers
	// (not for a Trailers-Only answer): the call is then committed.
	u.failed = u.c.failure(ctx, u.method, err, *u.trailerAddr, *u.headerAddr != nil, timeout, u.counter.retriedOn(u.cc, u.method))
	u.failed.target = target(u.cc)
	u.c.record(u.cc, u.failed)
	return u.failed
}

// callerMD returns the addresses that the caller's grpc.Header and
// grpc.Trailer options in opts have grpc fill, the last of each; nil for
// none. With reset, it also sets the metadata at every such address to nil.
func callerMD(opts []grpc.CallOption, reset bool) (header, trailer *metadata.MD) {
	for _, o := range opts {
		var h, t *metadata.MD
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			h = o.HeaderAddr
		case *grpc.HeaderCallOption:
			if o != nil {
				h = o.HeaderAddr
			}
		case grpc.TrailerCallOption:
			t = o.TrailerAddr
		case *grpc.TrailerCallOption:
			if o != nil {
				t = o.TrailerAddr
			}
		default:
			continue
		}
		if reset {
			if h != nil {
				*h = nil
			}
			if t != nil {
				*t = nil
			}
		}
		header, trailer = cmp.Or(h, header), cmp.Or(t, trailer)
	}
	return header, trailer
}

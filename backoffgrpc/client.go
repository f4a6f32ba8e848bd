package backoffgrpc

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/throttle"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The metadata keys of gRFC A6 that a [Client] and the server interceptors
// use.
const (
	// PreviousAttemptsKey is the request metadata of a retry: the number of
	// attempts before it, in decimal, in place of the caller's values; the
	// first attempt sends the caller's metadata as it is. A retry of
	// grpc-go's own within an attempt carries grpc-go's count first.
	PreviousAttemptsKey = "grpc-previous-rpc-attempts"

	// PushbackKey is the trailer by which a server asks for a delay before
	// the next attempt, in milliseconds; a negative or malformed value, or
	// more than one value, means "do not retry".
	PushbackKey = "grpc-retry-pushback-ms"
)

// DefaultMaxPushback is the longest pushback a [Client] honours when its
// MaxPushback is zero.
const DefaultMaxPushback = 30 * time.Second

// DefaultMaxReplayBytes is the bytes a [Client] keeps per stream for a retry
// when its MaxReplayBytes is zero: 256 KiB, as grpc-go's retry buffer.
const DefaultMaxReplayBytes = 256 << 10

var (
	// ErrCommitted is the reason a [Client] stops after an attempt whose
	// server had sent response headers or a message: gRFC A6's committed
	// call, which the server may have acted on.
	ErrCommitted = errors.New("backoffgrpc: the server had answered, the call is committed")

	// ErrNotReplayable is the reason a [Client] stops after an attempt of a
	// stream that sent more than MaxReplayBytes, or a grpc.PreparedMsg.
	ErrNotReplayable = errors.New("backoffgrpc: the stream cannot be replayed: it sent more than MaxReplayBytes, or a grpc.PreparedMsg")
)

// defaultPolicy is the policy of DefaultRetrier: full jitter, five
// attempts in all (A6's most).
var defaultPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base:        200 * time.Millisecond,
	Cap:         10 * time.Second,
	MaxAttempts: 5,
}, backoff.RuntimeRng{}))

// DefaultRetrier returns a new Retrier: full jitter, Base 200 ms, Cap 10 s,
// MaxAttempts 5.
func DefaultRetrier() *backoff.Retrier { return &backoff.Retrier{Policy: defaultPolicy} }

// Failure is a failed attempt, as [ClientConfig].ShouldRetry sees it.
type Failure struct {
	Method string // the call's full method name, "/package.Service/Method"

	// Err is the attempt's error: a status error, or, for an attempt that
	// ran out of AttemptTimeout, an error matching context.DeadlineExceeded
	// whose code is DEADLINE_EXCEEDED.
	Err error

	// Pushback is the delay the server asked for with PushbackKey, when
	// HasPushback is true (zero or more).
	Pushback    time.Duration
	HasPushback bool

	Timeout bool // the attempt ran out of AttemptTimeout
}

// DefaultShouldRetry is ShouldRetry when nil: true for UNAVAILABLE, for
// RESOURCE_EXHAUSTED with a pushback, and for an attempt that ran out of
// AttemptTimeout.
func DefaultShouldRetry(f Failure) bool {
	switch status.Code(f.Err) {
	case codes.Unavailable:
		return true
	case codes.ResourceExhausted:
		return f.HasPushback
	}
	return f.Timeout
}

// ClientConfig holds the parameters of a [Client]. Every field may be zero.
type ClientConfig struct {
	// Retrier runs each call's loop: its Policy (wrapped in a
	// [backoff.RetryAfter] for the pushback), Budget, MaxElapsed,
	// RetryInner and hooks, as [backoff.Retrier.Do] uses them, with the
	// call's context; OnRetry's error is Failure.Err, OnDone's the call's.
	// NewClient reads it once. Nil means [DefaultRetrier]().
	Retrier *backoff.Retrier

	// MaxPushback is the longest pushback honoured: a longer one stops the
	// call ([backoff.ErrHintTooLong]), or, with ClampPushback, waits
	// MaxPushback. A pushback of zero waits as the policy says. Negative is
	// invalid; zero means [DefaultMaxPushback].
	MaxPushback   time.Duration
	ClampPushback bool

	// AttemptTimeout, when positive, bounds each attempt: a unary call's
	// (the server sees the deadline), a stream's until its first message
	// or headers (a stream with headers but no message then ends,
	// committed). An attempt that ran out of it (it failed with
	// DEADLINE_EXCEEDED, or its timer cancelled the stream) fails with an
	// error that matches context.DeadlineExceeded, reports Timeout() true
	// and has status DEADLINE_EXCEEDED; [DefaultShouldRetry] retries it, so
	// set it only for methods that may run twice. Negative is invalid; zero
	// means none.
	AttemptTimeout time.Duration

	// ShouldRetry reports whether a failed attempt is worth retrying. It is
	// not asked once the context has ended or the call is committed, nor,
	// unless RetryInner, when the server said not to retry or grpc-go
	// retried below ([backoff.ErrRetriedBelow]). Nil means
	// [DefaultShouldRetry]. It must be safe for concurrent use.
	ShouldRetry func(f Failure) bool

	// MaxReplayBytes bounds what a stream keeps for a retry: each message
	// as SendMsg encoded it (before compression) and 5 bytes, as grpc-go
	// counts its retry buffer. A stream that sends more keeps nothing and
	// is not retried ([ErrNotReplayable]). Negative is invalid; zero means
	// [DefaultMaxReplayBytes].
	MaxReplayBytes int

	// Throttle, when not nil, gates every attempt, keyed by the
	// ClientConn's target (see [throttle.Throttle]): first tries only with
	// its Config.FirstTries, as they are made; retries always, once the
	// Retrier's Policy allows them, before the deadline, the Budget,
	// OnRetry and the wait (a retry refused withdraws nothing). An attempt
	// it refuses is not made, and the call stops: its *[backoff.Error] has
	// the Reason [throttle.ErrThrottled], the last failure of an attempt
	// made as Err (nil for none: the status is then UNKNOWN) and the
	// attempts made.
	// An attempt made is recorded as accepted unless it failed with
	// RESOURCE_EXHAUSTED, UNAVAILABLE or DEADLINE_EXCEEDED (its
	// AttemptTimeout and the caller's deadline included) or a pushback
	// that says not to retry; one cancelled is accepted. An attempt is
	// recorded once its outcome is known: a stream's when it commits,
	// fails or its context ends (one that does none never counts).
	Throttle *throttle.Throttle
	// Hedging, when not nil, makes the interceptors hedge calls instead
	// of retrying them: see [Hedging]. NewClient reads it once.
	Hedging *Hedging
}

// Client holds the client interceptors of one configuration. It is safe for
// concurrent use and may serve any number of connections.
type Client struct {
	retrier        backoff.Retrier
	onDone         func(ctx context.Context, attempts int, err error)
	shouldRetry    func(f Failure) bool
	attemptTimeout time.Duration
	maxReplayBytes int
	throttle       *throttle.Throttle

	hedging *Hedging        // nil: no hedging
	hedger  backoff.Retrier // the hedging loop (see setupHedging)
	maxWait time.Duration   // the longest pushback honoured
	hedges  sync.Pool       // of *hedging
}

// NewClient returns a Client for cfg, or a *[backoff.ParamError] naming the
// invalid field.
func NewClient(cfg ClientConfig) (*Client, error) {
	switch {
	case cfg.MaxPushback < 0:
		return nil, &backoff.ParamError{Param: "MaxPushback", Value: cfg.MaxPushback, Reason: "must not be negative"}
	case cfg.AttemptTimeout < 0:
		return nil, &backoff.ParamError{Param: "AttemptTimeout", Value: cfg.AttemptTimeout, Reason: "must not be negative"}
	case cfg.MaxReplayBytes < 0:
		return nil, &backoff.ParamError{Param: "MaxReplayBytes", Value: cfg.MaxReplayBytes, Reason: "must not be negative"}
	}
	c := &Client{
		shouldRetry:    cfg.ShouldRetry,
		attemptTimeout: cfg.AttemptTimeout,
		maxReplayBytes: cfg.MaxReplayBytes,
		throttle:       cfg.Throttle,
	}
	if c.shouldRetry == nil {
		c.shouldRetry = DefaultShouldRetry
	}
	if c.maxReplayBytes == 0 {
		c.maxReplayBytes = DefaultMaxReplayBytes
	}
	r := cfg.Retrier
	if r == nil {
		r = DefaultRetrier()
	}
	if r.Policy == nil {
		return nil, &backoff.ParamError{Param: "Retrier.Policy", Value: nil, Reason: "must not be nil"}
	}
	if r.MaxElapsed < 0 {
		return nil, &backoff.ParamError{Param: "Retrier.MaxElapsed", Value: r.MaxElapsed, Reason: "must not be negative"}
	}
	maxWait := cfg.MaxPushback
	if maxWait == 0 {
		maxWait = DefaultMaxPushback
	}
	policy, err := backoff.NewRetryAfter(r.Policy, backoff.RetryAfterConfig{MaxWait: maxWait, GiveUp: !cfg.ClampPushback})
	if err != nil { // maxWait is positive: a nil pointer or func
		return nil, &backoff.ParamError{Param: "Retrier.Policy", Value: r.Policy, Reason: "must not be a nil pointer or func"}
	}
	c.retrier = backoff.Retrier{Policy: policy, Budget: r.Budget, MaxElapsed: r.MaxElapsed, RetryInner: r.RetryInner}
	if onRetry := r.OnRetry; onRetry != nil {
		c.retrier.OnRetry = func(ctx context.Context, attempt int, err error, delay time.Duration) {
			onRetry(ctx, attempt, err.(*attemptError).reported, delay)
		}
	}
	c.onDone = r.OnDone
	if cfg.Hedging != nil {
		if err := c.setupHedging(*cfg.Hedging, r, maxWait, cfg.ClampPushback); err != nil {
			return nil, err
		}
	}
	if c.throttle != nil {
		c.retrier.Policy = c.gate(c.retrier.Policy)
		if c.hedging != nil {
			c.hedger.Policy = c.gate(c.hedger.Policy)
		}
	}
	return c, nil
}

// UnaryInterceptor returns the interceptor that retries unary calls.
//
// Each attempt calls the next invoker with the caller's options,
// PreviousAttemptsKey on a retry, and its own deadline with AttemptTimeout.
// The caller's grpc.Header and grpc.Trailer get the last attempt's metadata
// (nil when it reached no server); options shared by concurrent calls race,
// as in grpc. A failure is retried while the caller's context is live, the
// call is not committed (no response headers), the server did not say not
// to retry, and ShouldRetry agrees: after the policy's delay, or the
// server's pushback up to MaxPushback, unless the retry could not start
// before the context's deadline ([backoff.ErrDeadline]).
//
// A call returns nil or its loop's *[backoff.Error], also after one attempt,
// or none when its context had ended. The Reason: [ErrCommitted],
// [backoff.ErrPermanent] (ShouldRetry said no), [backoff.ErrRetriedBelow]
// (the server said not to retry, or grpc-go retried below), the policy's
// ([backoff.ErrExhausted]), [backoff.ErrBudget], [backoff.ErrHintTooLong],
// [backoff.ErrDeadline], [throttle.ErrThrottled] (see
// ClientConfig.Throttle) or the context's error. Err is the last
// attempt's error as ShouldRetry saw it (nil for none), which matches
// backoff.ErrRetriedBelow when the server said not to retry. The status,
// for status.Code and status.FromError, is the last attempt's code and
// details with the whole text as message; when the caller's context
// stopped the call, it is DEADLINE_EXCEEDED (the deadline ended, or left no
// time for a retry, before the Retrier's MaxElapsed) or CANCELLED, as with
// grpc-go's own retries. OnDone gets the same error.
//
// Unless [Client.DialOptions] turned grpc-go's retries off, on a channel
// whose service config gives the method a retryPolicy, or that is idle or
// connecting, each attempt gets per-RPC credentials that count grpc-go's
// attempts (a transparent retry counts, an attempt that found no
// connection does not) and act as the call's last
// grpc.PerRPCCredsCallOption's (none: no metadata, no transport security);
// a failure that grpc-go retried (the method had a retryPolicy when the
// call began, or has one now) stops the loop ([backoff.ErrRetriedBelow])
// unless RetryInner.
func (c *Client) UnaryInterceptor() grpc.UnaryClientInterceptor { return c.unary(false) }

// StreamInterceptor returns the interceptor that retries streams of every
// kind under the rules of [Client.UnaryInterceptor], until the call is
// committed: until the first response header or message arrives. The first
// attempt's stream is opened at once; its failure surfaces in the first
// RecvMsg or Header, which runs the loop: each retry opens a new stream,
// sends again the messages sent so far and CloseSend if the caller closed.
// SendMsg returns nil for a message kept for a retry, and an error for one
// that grpc's SendMsg rejects (over the size limit, or not encodable),
// which ends the call; SendMsg and CloseSend wait while a retry sends.
// Once committed, every method goes to the attempt's stream, whose errors
// RecvMsg returns as grpc does (matching backoff.ErrRetriedBelow when the
// server said not to retry; AttemptTimeout's as its first message came).
//
// SendMsg encodes each message kept with the codec grpc-go chooses for the
// call's options, and every attempt sends those bytes: interceptors chained
// after this one, and stats handlers, see a value of this package's type
// (with the message's lengths); chain one that reads messages before it. A grpc.PreparedMsg is sent
// as it is, and the stream is then not retried.
//
// The loop, and the Retrier's MaxElapsed from the first attempt, ends at
// the first RecvMsg or Header, at a SendMsg that fails with the client's
// own error (not retried), or when the stream's context ends before them;
// OnDone is called once then. A failure before the commit is the loop's
// *[backoff.Error], as a unary call's: the interceptor returns it when the
// first stream could not be opened and is not retried; otherwise RecvMsg
// returns it, again on later calls, while Header returns no headers and a
// nil error, and SendMsg io.EOF.
func (c *Client) StreamInterceptor() grpc.StreamClientInterceptor { return c.stream(false) }

// DialOptions returns the options that install both interceptors on a
// channel and turn grpc-go's own retries off (grpc.WithDisableRetry), so
// that a retryPolicy in the service config cannot multiply with them.
func (c *Client) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(c.unary(true)),
		grpc.WithChainStreamInterceptor(c.stream(true)),
		grpc.WithDisableRetry(),
	}
}

// attemptError is an attempt's failure as the loop sees it: Error and
// Unwrap are the failure's, Retryable is the Client's verdict, RetryAfter
// the server's pushback.
type attemptError struct {
	err      error         // the failure as the caller sees it
	reported error         // Failure.Err, which ShouldRetry and OnRetry get
	pushback time.Duration // the server's pushback; zero for none
	retry    bool          // the verdict: retry it

	committed     bool // the server had answered: ErrCommitted
	rejected      bool // the attempt got no answer, or one that rejects requests (see rejected)
	notReplayable bool // the stream cannot be sent again: ErrNotReplayable
	elapsed       bool // no retry may begin within MaxElapsed: backoff.ErrDeadline

	chain  [2]error // err, and ErrRetriedBelow when the server said not to retry
	n      int
	target string // the ClientConn's, the Throttle's key; set by the caller of failure
}

func (e *attemptError) Error() string             { return e.err.Error() }
func (e *attemptError) Unwrap() []error           { return e.chain[:e.n] }
func (e *attemptError) Retryable() bool           { return e.retry }
func (e *attemptError) RetryAfter() time.Duration { return e.pushback }

// failure classifies the failure err of an attempt of method. trailer is
// the attempt's trailer metadata, committed whether the server had sent
// response headers, timeout whether the attempt ran out of AttemptTimeout,
// retried whether grpc-go made more than one attempt of it.
func (c *Client) failure(ctx context.Context, method string, err error, trailer metadata.MD, committed, timeout, retried bool) *attemptError {
	if timeout {
		err = &timeoutError{timeout: c.attemptTimeout, err: err}
	}
	e := &attemptError{err: err, reported: err, committed: committed}
	e.chain[0], e.n = err, 1
	f := Failure{Method: method, Err: err, Timeout: timeout}
	var below bool
	f.Pushback, f.HasPushback, below = readPushback(trailer)
	e.pushback, e.rejected = f.Pushback, rejected(err, below)
	if below {
		// The server retried already, or asks its callers not to: the
		// failure says so, even when the call is committed, to a loop
		// around the call and a server interceptor above; and the loop
		// stops unless RetryInner.
		e.err = belowFailure(err)
		e.chain[0] = e.err
	}
	if committed && retried && !below {
		// grpc-go's own retries retried it before an attempt of theirs
		// was committed: say so to a server interceptor above.
		e.err = belowFailure(err)
		e.chain[0] = e.err
	}
	if ctx.Err() != nil || committed {
		return e
	}
	if retried {
		below = true // grpc-go's own retries handled it
	}
	if below {
		e.chain[1], e.n = backoff.ErrRetriedBelow, 2
		e.retry = !c.retrier.RetryInner || c.shouldRetry(f)
		return e
	}
	e.retry = c.shouldRetry(f)
	return e
}

// readPushback reads the pushback of an attempt's trailer: the delay the server
// asked for (ok), or whether it said not to retry (below: a negative or
// malformed value, or more than one).
func readPushback(trailer metadata.MD) (d time.Duration, ok, below bool) {
	switch v := trailer[PushbackKey]; len(v) {
	case 0:
		return 0, false, false
	case 1:
		// A count past int64's range is not malformed: ParseInt
		// returns the largest, which is longer than MaxPushback.
		ms, err := strconv.ParseInt(v[0], 10, 64)
		if ms < 0 || err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false, true
		}
		return time.Duration(min(ms, int64(time.Duration(1<<63-1)/time.Millisecond))) * time.Millisecond, true, false
	}
	return 0, false, true
}

// result turns the loop's outcome into the call's, and reports it to
// OnDone; attempts is the number of attempts made, start the first's when
// the Retrier has a MaxElapsed. A failure is the loop's *backoff.Error,
// with the attempt's error as the caller sees it (as grpc returned it, or
// its belowError or timeoutError) for Err, ErrCommitted, ErrNotReplayable
// or backoff.ErrDeadline for a reason that the attempt gave, and, when the
// caller's context stopped the loop, a reason whose status is the
// context's (see callerReason); the status of any other is its Err's.
func (c *Client) result(ctx context.Context, start time.Time, attempts int, err error) error {
	if err == nil {
		if c.onDone != nil {
			c.onDone(ctx, attempts, nil)
		}
		return nil
	}
	e := err.(*backoff.Error) // Retrier.Do returns nothing else
	if code, ok := c.callerCode(ctx, start, e.Reason); ok {
		e.Reason = &callerReason{reason: e.Reason, code: code}
	}
	if ae, ok := e.Err.(*attemptError); ok {
		e.Err = ae.err
		if e.Reason == backoff.ErrPermanent {
			switch {
			case ae.committed:
				e.Reason = ErrCommitted
			case ae.notReplayable:
				e.Reason = ErrNotReplayable
			case ae.elapsed:
				e.Reason = backoff.ErrDeadline
			}
		}
	}
	if e.Err == errThrottleRefused {
		e.Reason, e.Err, e.Attempts = throttle.ErrThrottled, nil, attempts
	}
	if c.onDone != nil {
		c.onDone(ctx, e.Attempts, e)
	}
	return e
}

// callerCode returns the status of a call whose loop stopped for reason,
// when the caller's context stopped it: CANCELLED or DEADLINE_EXCEEDED
// when the context ended, DEADLINE_EXCEEDED for a retry that could not
// begin before the context's deadline (backoff.ErrDeadline, when that
// deadline comes before the Retrier's MaxElapsed from start).
func (c *Client) callerCode(ctx context.Context, start time.Time, reason error) (codes.Code, bool) {
	switch reason {
	case context.Canceled, context.DeadlineExceeded:
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Code(), true
		}
	case backoff.ErrDeadline:
		dl, ok := ctx.Deadline()
		elapsed := c.retrier.MaxElapsed
		return codes.DeadlineExceeded, ok && (elapsed == 0 || !dl.After(start.Add(elapsed)))
	}
	return codes.OK, false
}

// callerReason is the reason of a call that its caller's context stopped
// (see callerCode): it reads and unwraps as the loop's reason, and its
// status, which status.FromError and status.Code find first in the
// *backoff.Error, is the context's, as grpc-go's retries report it.
type callerReason struct {
	reason error
	code   codes.Code
}

func (r *callerReason) Error() string              { return r.reason.Error() }
func (r *callerReason) Unwrap() error              { return r.reason }
func (r *callerReason) GRPCStatus() *status.Status { return status.New(r.code, r.reason.Error()) }

// attemptContext returns the context of attempt n (1 for the first): ctx,
// and on a retry PreviousAttemptsKey: n-1, in place of the values ctx's
// outgoing metadata had for it (a proxy may have copied them there from
// its own incoming call).
func attemptContext(ctx context.Context, n int) context.Context {
	if n <= 1 {
		return ctx
	}
	v := strconv.Itoa(n - 1)
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md[PreviousAttemptsKey]) > 0 {
		md[PreviousAttemptsKey] = []string{v} // md is a copy
		return metadata.NewOutgoingContext(ctx, md)
	}
	return metadata.AppendToOutgoingContext(ctx, PreviousAttemptsKey, v)
}

// deadlineWithin reports whether ctx's deadline comes within d: an
// attempt's timer of d would then race the caller's deadline, which ends
// the attempt anyway.
func deadlineWithin(ctx context.Context, d time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) <= d
}

// timeoutCode reports whether err may be the end of an attempt by its
// AttemptTimeout: DEADLINE_EXCEEDED (grpc's when a unary attempt's deadline
// passes, or the server's answer to that deadline), or, when cancelled,
// CANCELLED (grpc's when a stream's attempt is cancelled by its timer). Any
// other code is an answer that came first, even if it is read later.
func timeoutCode(err error, cancelled bool) bool {
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return true
	case codes.Canceled:
		return cancelled
	}
	return false
}

// timeoutError is the failure of an attempt that ran out of AttemptTimeout.
type timeoutError struct {
	timeout time.Duration
	err     error // what the attempt returned
}

func (e *timeoutError) Error() string {
	return "backoffgrpc: attempt timed out after " + e.timeout.String() + " (AttemptTimeout)"
}

// Is makes a timed-out attempt match context.DeadlineExceeded.
func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, as net.Error's Timeout does for a timeout.
func (e *timeoutError) Timeout() bool { return true }

// Unwrap returns the attempt's own error.
func (e *timeoutError) Unwrap() error { return e.err }

// GRPCStatus is DEADLINE_EXCEEDED with the error's text.
func (e *timeoutError) GRPCStatus() *status.Status {
	return status.New(codes.DeadlineExceeded, e.Error())
}

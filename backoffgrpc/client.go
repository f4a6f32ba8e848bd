package backoffgrpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The metadata keys of gRFC A6 that a [Client] and the server interceptors
// use.
const (
	// PreviousAttemptsKey is the request metadata key that a retry carries:
	// the number of attempts made before it, in decimal, as its one value,
	// in place of any that the caller's outgoing metadata had. The first
	// attempt sends the caller's metadata as it is: none, unless the
	// caller set it. On a channel with grpc-go's retries (see
	// [Client.UnaryInterceptor]), grpc-go's transport adds a value of its
	// own to each retry of its own: a retry of grpc-go's within a retry of
	// the interceptor's carries two values, grpc-go's count of its
	// attempts within the interceptor's attempt first, then the
	// interceptor's count of its own attempts before it.
	PreviousAttemptsKey = "grpc-previous-rpc-attempts"

	// PushbackKey is the trailer by which a server asks for a delay before
	// the next attempt, in milliseconds; a negative or malformed value, or
	// more than one value, means "do not retry".
	PushbackKey = "grpc-retry-pushback-ms"
)

// DefaultMaxPushback is the longest pushback a [Client] honours when its
// MaxPushback is zero.
const DefaultMaxPushback = 30 * time.Second

// DefaultMaxReplayBytes is the number of bytes a [Client] keeps per stream
// for a retry when its MaxReplayBytes is zero: 256 KiB, the default of
// grpc-go's own retry buffer (grpc.MaxRetryRPCBufferSize).
const DefaultMaxReplayBytes = 256 << 10

var (
	// ErrCommitted is the reason a [Client] stops after an attempt whose
	// server had sent its response headers (or a message) before it failed:
	// gRFC A6 counts such a call as committed, since the server may have
	// acted on it.
	ErrCommitted = errors.New("backoffgrpc: the server had answered, the call is committed")

	// ErrNotReplayable is the reason a [Client] stops after an attempt of a
	// stream that sent more than MaxReplayBytes, or a grpc.PreparedMsg
	// (whose bytes it cannot read): its messages cannot be sent again. (A
	// message that its codec cannot encode fails SendMsg with grpc-go's
	// INTERNAL, and ends the call, not retried.)
	ErrNotReplayable = errors.New("backoffgrpc: the stream cannot be replayed: it sent more than MaxReplayBytes, or a grpc.PreparedMsg")
)

// defaultPolicy is the policy of DefaultRetrier: full jitter, five
// attempts in all (A6's most).
var defaultPolicy = backoff.Must(backoff.NewFullJitter(backoff.Config{
	Base:        200 * time.Millisecond,
	Cap:         10 * time.Second,
	MaxAttempts: 5,
}, backoff.RuntimeRng{}))

// DefaultRetrier returns a new Retrier whose policy is full jitter with Base
// 200 ms, Cap 10 s and MaxAttempts 5, its other fields zero.
func DefaultRetrier() *backoff.Retrier { return &backoff.Retrier{Policy: defaultPolicy} }

// Failure is a failed attempt, as [ClientConfig].ShouldRetry sees it.
type Failure struct {
	// Method is the call's full method name, "/package.Service/Method".
	Method string

	// Err is the attempt's error: a status error (status.Code reads its
	// code), or, for an attempt that ran out of AttemptTimeout, an error
	// that matches context.DeadlineExceeded whose code is
	// DEADLINE_EXCEEDED.
	Err error

	// Pushback is the delay the server asked for with PushbackKey, when
	// HasPushback is true (zero or more).
	Pushback    time.Duration
	HasPushback bool

	// Timeout reports that the attempt ran out of AttemptTimeout.
	Timeout bool
}

// DefaultShouldRetry is the classification of a [Client] whose ShouldRetry
// is nil: UNAVAILABLE (the server could not take the call, or the
// connection failed before it answered), RESOURCE_EXHAUSTED when the server
// sent a pushback (it says when to try again; without one it may be a
// quota that a retry cannot mend), and an attempt that ran out of
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
	// Retrier runs each call's retry loop: its Policy, Budget, MaxElapsed,
	// RetryInner and hooks are used as [backoff.Retrier.Do] uses them, the
	// Policy wrapped in a [backoff.RetryAfter] for the server's pushback.
	// The hooks get the call's context; OnRetry's error is the attempt's
	// as ShouldRetry sees it (Failure.Err), OnDone's nil or the
	// *[backoff.Error] whose Err that is, even when the call returns the
	// attempt's error itself. The Retrier is read once, by NewClient. Nil
	// means [DefaultRetrier]().
	Retrier *backoff.Retrier

	// MaxPushback is the longest pushback honoured: a longer one stops the
	// call with [backoff.ErrHintTooLong], or, with ClampPushback, waits
	// MaxPushback. A pushback of zero waits as the policy says. It must
	// not be negative; zero means [DefaultMaxPushback].
	MaxPushback   time.Duration
	ClampPushback bool

	// AttemptTimeout, when positive, bounds each attempt: a unary call's
	// whole attempt (the server sees the shorter deadline), a stream's
	// until its first message arrives or Header returns its headers (an
	// attempt whose headers came but no message in time still ends, and
	// is not retried: it is committed). An attempt that runs out of it
	// fails with an error that matches context.DeadlineExceeded, whose
	// Timeout method reports true and whose status is DEADLINE_EXCEEDED;
	// [DefaultShouldRetry] retries it, so set AttemptTimeout only for
	// methods that may run twice. Only an attempt that failed with
	// DEADLINE_EXCEEDED (grpc's, or the server's answer to the attempt's
	// deadline), or a stream's that its timer cancelled, has run out of
	// it: an answer with another code (INTERNAL, ...) came first, and is
	// that answer, even when it is read after the time ran out. It must
	// not be negative; zero means none.
	AttemptTimeout time.Duration

	// ShouldRetry reports whether a failed attempt is worth retrying. It
	// is not asked when the call's context has ended or the call is
	// committed (see [ErrCommitted]), which stop the loop, nor, unless the
	// Retrier's RetryInner is set, when the server said not to retry (a
	// negative, malformed or repeated pushback) or grpc-go retried the
	// call below (see [Client.UnaryInterceptor]), which stop it with
	// [backoff.ErrRetriedBelow].
	// Nil means [DefaultShouldRetry]. It must be safe for concurrent use.
	ShouldRetry func(f Failure) bool

	// MaxReplayBytes bounds what a stream keeps to send it again on a
	// retry: each message as SendMsg encoded it, counted as its encoded
	// size (before compression: what is kept) and the 5 bytes of its gRPC
	// message header, as grpc-go counts its own retry buffer. A stream
	// that sends more is not retried after that ([ErrNotReplayable]) and
	// keeps nothing. It must not be negative; zero means
	// [DefaultMaxReplayBytes].
	MaxReplayBytes int
}

// Client holds the client interceptors of one configuration. It is safe for
// concurrent use and may serve any number of connections.
type Client struct {
	retrier        backoff.Retrier
	onDone         func(ctx context.Context, attempts int, err error)
	shouldRetry    func(f Failure) bool
	attemptTimeout time.Duration
	maxReplayBytes int
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
			onRetry(ctx, attempt, err.(*attemptError).err, delay)
		}
	}
	c.onDone = r.OnDone
	return c, nil
}

// UnaryInterceptor returns the interceptor that retries unary calls.
//
// Each attempt calls the next invoker with the caller's options, with
// PreviousAttemptsKey on a retry and its own deadline with AttemptTimeout.
// The interceptor reads each attempt's response header and trailer through
// the caller's grpc.Header and grpc.Trailer options, or options of its own
// when the caller gave none: it sets the caller's to nil before each
// attempt, so that the caller gets the last attempt's, nil when that
// attempt reached no server. Like grpc, it reads them as grpc fills them:
// options shared by concurrent calls (a channel's default call options)
// race, and may then show a committed call as not committed.
// A failure is retried when the caller's context is live, the server sent
// no response headers (the call is not committed), the server did not say
// not to retry, and ShouldRetry agrees; the Retrier's policy then decides
// the delay, or the server's pushback does, up to MaxPushback. A retry that
// could not start before the context's deadline is not waited for
// ([backoff.ErrDeadline]).
//
// A call that succeeds returns nil. A call whose only attempt failed with
// an error that is not retried (ShouldRetry says no, or the call is
// committed) returns that error as grpc returned it, and a call whose
// context had ended before its first attempt the context's status
// (CANCELLED or DEADLINE_EXCEEDED); one whose only attempt's server said
// not to retry, committed or not, or that grpc-go's own retries retried
// before it was committed, returns an error with that status and text
// that also matches [backoff.ErrRetriedBelow] (OnDone gets the
// *[backoff.Error]). Any other failure returns the
// *[backoff.Error] that says why the loop stopped ([backoff.ErrExhausted],
// [backoff.ErrDeadline], [backoff.ErrBudget], [backoff.ErrHintTooLong],
// [backoff.ErrRetriedBelow], [ErrCommitted], the context's error, ...).
// Its Err is the last attempt's error (one that the server said not to
// retry in a wrapper that reads as it, has its status and matches
// backoff.ErrRetriedBelow, so that a loop around the call stands back from
// it as well), its message the whole text ("backoff: stopped after 3 attempts (attempts
// exhausted): rpc error: code = Unavailable desc = ..."), and its status,
// for status.FromError and status.Code, the last attempt's, unless the
// caller's context stopped the call. Then, as with grpc-go's own retries
// and whatever the timing, the status is the context's: DEADLINE_EXCEEDED
// when the deadline ended during an attempt or a wait, or left no time for
// the next retry ([backoff.ErrDeadline]; the Retrier's MaxElapsed, when it
// ends first, keeps the last attempt's status), CANCELLED after a cancel.
// The Reason then matches the context's error or ErrDeadline (errors.Is),
// and status.Code(e.Err) is the last attempt's.
//
// On a channel whose service config gives the method a retryPolicy (as
// grpc.ClientConn.GetMethodConfig reports it), and on a channel that is
// idle or connecting, whose service config may not be known yet, the
// interceptor counts grpc-go's attempts of each of its own: it adds to the
// call's options per-RPC credentials (grpc.PerRPCCredentials), which
// grpc-go asks for metadata once per attempt, and which otherwise act as
// the credentials of the call's last grpc.PerRPCCredsCallOption, if any:
// they send its metadata and report its RequireTransportSecurity (false
// for none). When grpc-go made more than one attempt and the method had a
// retryPolicy when the call began (a stream: when the attempt began) or
// has one now, grpc-go has retried the failure: the interceptor stands back
// from it ([backoff.ErrRetriedBelow]), unless the Retrier's RetryInner is
// set. A failure that grpc-go made one attempt of (with
// grpc.WithDisableRetry, for a code the policy does not retry, or under
// the policy's retryThrottling) is decided as on a channel without a
// retryPolicy, under the Retrier's own policy and Budget. A transparent
// retry of grpc-go's (of an attempt that no server processed, which it
// makes even with grpc.WithDisableRetry) counts as an attempt; an attempt
// that found no connection to send it on does not, so that grpc-go's
// retries of those and the interceptor's multiply. [Client.DialOptions]
// turns grpc-go's retries off, and the interceptors count nothing.
func (c *Client) UnaryInterceptor() grpc.UnaryClientInterceptor { return c.unary(false) }

// StreamInterceptor returns the interceptor that retries streams of every
// kind, under the rules of [Client.UnaryInterceptor], until the call is
// committed: until the first response header or message arrives. A
// stream's attempt is opened at once; its failure, even when SendMsg meets
// it, surfaces in the first RecvMsg or Header, which then runs the retry
// loop: each retry opens a new stream, sends again the messages sent so
// far (at most MaxReplayBytes) and CloseSend if the caller closed, while
// the loop reads its answers, and the caller receives the answer of the
// attempt that answered, once. SendMsg returns nil for a message kept for
// a retry (once grpc's SendMsg on the attempt's ended stream, if there is
// one, has found nothing wrong with it: a message over the call's size
// limit fails there, RESOURCE_EXHAUSTED, and ends the call); SendMsg and
// CloseSend wait while a retry sends the messages again. Once committed, every method goes straight to the attempt's
// stream; RecvMsg's failure whose server said not to retry has its status
// and text and also matches [backoff.ErrRetriedBelow], as a committed
// unary call's does.
//
// Until then, within MaxReplayBytes, SendMsg encodes each message itself,
// with the codec that grpc-go chooses for the call's options (the last
// grpc.ForceCodecV2, grpc.ForceCodec or grpc.CallCustomCodec, else the
// codec registered for grpc.CallContentSubtype, else proto's), and every
// attempt sends those bytes, compressed as the call's options say, under
// the same content-subtype: a retry sends what the first attempt sent,
// even when the caller reuses a message or its buffer once SendMsg has
// returned. Interceptors chained after this one receive such a message as
// a value of a type of this package's, which they can only pass on, and so
// does a stats handler's stats.OutPayload.Payload (its lengths are the
// message's, and grpc-go's binary log gets the bytes): an interceptor that
// reads the caller's messages (one that validates or logs them) is chained
// before this one, where it sees each message once. A grpc.PreparedMsg is
// sent as it is, and is not kept: the stream is then not retried, as past
// MaxReplayBytes.
//
// The loop, and so the Retrier's MaxElapsed (counted from the first
// attempt), covers the call until it is committed or fails. It ends, and
// calls OnDone once, at the first RecvMsg or Header; at a SendMsg (or a
// retry's sending again) that fails with the client's own error, which
// ends the stream as in grpc-go and is not retried; or when the stream's
// context ends before any of those (a caller that cancels without
// receiving), then at once, with the context's error, the call counted in
// the Budget. A stream left otherwise (its ClientConn closed, and neither
// a RecvMsg nor an end of its context) is not done for OnDone.
//
// Errors: the interceptor returns an error only when the first attempt's
// stream could not be opened and its failure is not retried, a loop of
// one attempt: grpc's error as it returned it, or, as a unary call's, the
// context's status when the context had ended before the open (no attempt
// made), and the *[backoff.Error] of 1 attempt, with grpc's error and the
// context's status, when it ended during the open (grpc.WaitForReady
// waits). Before the commit, a failed call ends in the
// RecvMsg or Header that runs the loop, with the error that
// [Client.UnaryInterceptor] would return (grpc's, or the *[backoff.Error],
// with the caller's DEADLINE_EXCEEDED or CANCELLED when its context
// stopped the call); from then on RecvMsg returns that error again, Header
// no headers and a nil error, as grpc's does, and SendMsg io.EOF. Once
// committed, the errors are the attempt's stream's, as grpc returns them,
// but for an attempt whose AttemptTimeout ran out as its first message
// came, which fails with the attempt's timeout.
func (c *Client) StreamInterceptor() grpc.StreamClientInterceptor { return c.stream(false) }

// DialOptions returns the options that install both interceptors on a
// channel and turn grpc-go's own retries off (grpc.WithDisableRetry), so
// that a retryPolicy in the channel's service config cannot multiply with
// the interceptors' retries, and the interceptors need not count grpc-go's
// attempts (see [Client.UnaryInterceptor]).
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
	pushback time.Duration // the server's pushback; zero for none
	retry    bool          // the verdict: retry it

	committed     bool // the server had answered: ErrCommitted
	notReplayable bool // the stream cannot be sent again: ErrNotReplayable
	elapsed       bool // no retry may begin within MaxElapsed: backoff.ErrDeadline

	chain [2]error // err, and ErrRetriedBelow when the server said not to retry
	n     int
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
	e := &attemptError{err: err, committed: committed}
	e.chain[0], e.n = err, 1
	f := Failure{Method: method, Err: err, Timeout: timeout}
	var below bool
	f.Pushback, f.HasPushback, below = readPushback(trailer)
	e.pushback = f.Pushback
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

package backoffgrpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/backoffgo/backoff"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The stream interceptor returns a clientStream, which opens one grpc stream
// per attempt. Until the call is committed (response headers or a message
// received) it keeps the messages sent, encoded (see replay.go), up to
// MaxReplayBytes, and the first RecvMsg or Header runs the retry loop (or
// a SendMsg's own error, or the end of the caller's context, if it comes
// first): each retry opens a new stream, sends the kept messages again
// (and CloseSend, if the caller closed) and tries once more. Once
// committed, the calls go straight to the attempt's stream.

func (c *Client) stream(builtinOff bool) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s := &clientStream{c: c, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, opts: opts, replayable: true}
		if s.codec = callCodec(opts); s.codec != nil {
			s.opts = append(opts[:len(opts):len(opts)], grpc.ForceCodecV2(s.codec))
		}
		if !builtinOff {
			s.needsCount, _ = needsCounter(cc, method)
		}
		if s.needsCount {
			s.creds = callerCreds(opts)
		}
		if c.retrier.MaxElapsed > 0 {
			s.start = time.Now()
		}
		ended := ctx.Err() != nil // before the first attempt: none is made
		s.open(ctx)
		if s.cur == nil {
			failure := s.openFailure(ctx, s.counter)
			if !failure.retry {
				s.failedAttempt(failure)
				// Nothing to retry: the loop of one attempt tells OnDone,
				// and its *backoff.Error is the interceptor's error.
				err := c.retrier.Do(ctx, func(context.Context) error { return failure })
				if e := err.(*backoff.Error); e.Attempts == 0 && !ended { // the context ended during the open
					s.made(e, &c.retrier, failure)
				}
				return nil, c.result(ctx, s.start, s.attempts, err)
			}
		}
		// A caller that ends its context before any RecvMsg or Header
		// ends the call there: the loop runs then, and ends at once. (The
		// lock keeps it from commit's call of unwatch until it is set.)
		if ctx.Done() != nil {
			s.mu.Lock()
			s.unwatch = context.AfterFunc(ctx, func() { s.run(nil, func(grpc.ClientStream) error { return nil }) })
			s.mu.Unlock()
		}
		return s, nil
	}
}

type clientStream struct {
	c          *Client
	ctx        context.Context // the caller's
	desc       *grpc.StreamDesc
	cc         *grpc.ClientConn
	method     string
	streamer   grpc.Streamer
	opts       []grpc.CallOption             // the caller's, and the codec's
	codec      *replayCodec                  // the call's; nil when grpc-go has none for its options
	needsCount bool                          // needsCounter: each attempt gets an attemptCounter, counter
	creds      credentials.PerRPCCredentials // the caller's, which counter wraps
	start      time.Time                     // the first attempt's, for MaxElapsed

	mu       sync.Mutex
	cur      grpc.ClientStream // the attempt's stream; nil when it could not be opened; the last one's when the Throttle refused it
	openErr  error             // why the attempt's stream could not be opened
	cancel   context.CancelFunc
	timedOut func() bool // whether the attempt ran out of AttemptTimeout; nil without one
	stop     func() bool // stops the AttemptTimeout timer
	attempts int         // streams opened, or tried
	counter  *attemptCounter

	dead       bool          // cur has ended: messages are only kept
	failed     bool          // the loop has seen cur fail: its next attempt opens a new stream
	last       *attemptError // the failure of the last attempt made, once the loop has seen it
	pending    bool          // the loop may retry cur's failure: it decides, or waits
	abandon    func()        // ends the loop's wait
	unwatch    func() bool   // stops the watch on the caller's context, which runs the loop; nil for a context that never ends
	sent       []*encoded    // the messages sent, while replayable
	sentBytes  int           // their size, as MaxReplayBytes counts it
	replayable bool          // sent holds every message sent so far
	sendFailed bool          // a SendMsg failed with the client's own error: no retry
	closed     bool          // the caller called CloseSend
	committed  bool          // no more retries: the calls go to cur
	final      error         // the stream's end, once known (io.EOF or the call's error)
	loop       chan struct{} // closed when the loop that runs ends
	replaying  chan struct{} // closed when cur's replay has been sent
}

// open opens the stream of the next attempt and starts sending it the
// messages sent so far (see replay). s.mu is held, except for the first
// attempt's open.
func (s *clientStream) open(ctx context.Context) {
	if err := s.c.allow(s.cc, s.attempts+1); err != nil {
		// cur stays the last attempt's, whose metadata the caller gets.
		s.openErr, s.dead = err, true
		return
	}
	s.attempts++
	if s.cancel != nil { // the previous attempt has ended
		s.stop()
		s.cancel()
	}
	a := s.newAttempt(ctx, s.attempts)
	s.cancel, s.timedOut, s.stop, s.counter = a.cancel, a.timedOut, a.stop, a.counter
	if a.err != nil {
		s.cur, s.openErr, s.dead = nil, a.err, true
		return
	}
	cs := a.cs
	s.cur, s.openErr, s.dead = cs, nil, false
	if len(s.sent) > 0 {
		done := make(chan struct{})
		s.replaying = done
		go s.replay(cs, s.sent, s.closed, done)
	} else if s.closed {
		cs.CloseSend()
	}
}

// streamAttempt is one attempt's stream, or why it could not be opened,
// and what ends it.
type streamAttempt struct {
	cs       grpc.ClientStream
	err      error              // why cs could not be opened
	cancel   context.CancelFunc // ends the attempt; nil when nothing but the caller's context does
	timedOut func() bool        // whether it ran out of AttemptTimeout; nil without one
	stop     func() bool        // stops the AttemptTimeout timer; not nil when cancel is not
	counter  *attemptCounter
	eof      bool // a hedged copy answered io.EOF without headers
}

// newAttempt opens the stream of attempt n on ctx, with AttemptTimeout's
// timer if any, and a cancel of its own when the Client hedges (a copy
// that loses is cancelled).
func (s *clientStream) newAttempt(ctx context.Context, n int) (a streamAttempt) {
	actx := attemptContext(ctx, n)
	if d := s.c.attemptTimeout; d > 0 && !deadlineWithin(ctx, d) {
		var cancel context.CancelCauseFunc
		actx, cancel = context.WithCancelCause(actx)
		t := time.AfterFunc(d, func() { cancel(errAttemptTimer) })
		a.cancel, a.stop = func() { cancel(nil) }, t.Stop
		a.timedOut = func() bool { return context.Cause(actx) == errAttemptTimer }
	} else if s.c.hedging != nil {
		actx, a.cancel = context.WithCancel(actx)
		a.stop = func() bool { return false }
	}
	opts := s.opts
	if s.needsCount {
		a.counter = &attemptCounter{inner: s.creds, policy: builtinRetries(s.cc, s.method)}
		opts = append(opts[:len(opts):len(opts)], grpc.PerRPCCredentials(a.counter))
	}
	if a.cs, a.err = s.streamer(actx, s.desc, s.cc, s.method, opts...); a.err != nil && a.cancel != nil {
		a.stop() // the attempt is over: whether it timed out is settled
		a.cancel()
	}
	return a
}

// replay sends msgs again on cs, the stream of a retry, and CloseSend if
// closed, then closes done. It runs on a goroutine of its own, so that the
// loop reads cs's answers meanwhile, as flow control may need; the
// caller's SendMsg and CloseSend wait for it.
func (s *clientStream) replay(cs grpc.ClientStream, msgs []*encoded, closed bool, done chan struct{}) {
	var err error
	for _, m := range msgs {
		if err = cs.SendMsg(m); err != nil {
			break
		}
	}
	if err == nil && closed {
		cs.CloseSend()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.cur == cs {
		s.dead = true // its failure comes from RecvMsg
		s.sendFailed = s.sendFailed || err != io.EOF
	}
	if s.replaying == done {
		s.replaying = nil
	}
	close(done)
}

// await waits until *ch is nil, which it is set to when closed. s.mu is
// held, and released during the wait.
func (s *clientStream) await(ch *chan struct{}) {
	for *ch != nil {
		c := *ch
		s.mu.Unlock()
		<-c
		s.mu.Lock()
	}
}

// retrier returns the Retrier of the stream's loop, which begins at its
// first RecvMsg or Header: the Client's, its MaxElapsed counted from the
// first attempt, its OnRetry given the caller's context (the loop runs
// with its own). elapsed reports that none of MaxElapsed is left: no retry
// may begin.
func (s *clientStream) retrier() (r *backoff.Retrier, elapsed bool) {
	r = &s.c.retrier
	if r.MaxElapsed == 0 && r.OnRetry == nil {
		return r, false
	}
	loop := *r
	if onRetry := r.OnRetry; onRetry != nil {
		loop.OnRetry = func(_ context.Context, attempt int, err error, delay time.Duration) {
			onRetry(s.ctx, attempt, err, delay)
		}
	}
	if r.MaxElapsed > 0 {
		loop.MaxElapsed -= time.Since(s.start)
		if elapsed = loop.MaxElapsed <= 0; elapsed {
			loop.MaxElapsed = 0
		}
	}
	return &loop, elapsed
}

// made corrects e, the end of a loop (of Retrier r) whose context had
// ended before it began, when Retrier.Do calls nothing and deposits
// nothing in the Budget: the stream's attempts were made, and the call is
// deposited. last is the last attempt's failure, nil when none is known
// (the stream may be live).
func (s *clientStream) made(e *backoff.Error, r *backoff.Retrier, last *attemptError) {
	e.Attempts = s.attempts
	if last != nil {
		e.Err = last
	}
	if r.Budget != nil {
		r.Budget.Deposit()
	}
}

// failedAttempt records e, the failure of an attempt, in the Throttle and
// as the last, unless the Throttle refused the attempt. s.mu is held, but
// for the first attempt's.
func (s *clientStream) failedAttempt(e *attemptError) {
	if _, refused := e.err.(*refusal); !refused {
		s.c.record(s.cc, e)
		s.last = e
	}
}

// recordUnread records in the Throttle the attempt made by NewStream,
// when the caller's context ended before the loop could: one opened is
// accepted when the caller cancelled it, rejected when its deadline ended
// it; one that could not be opened as its failure says. s.mu is held.
func (s *clientStream) recordUnread() {
	switch {
	case s.c.throttle == nil:
	case s.cur != nil:
		s.c.throttle.Record(target(s.cc), s.ctx.Err() == context.Canceled)
	case s.openErr != errThrottleRefused: // NewStream returned a refusal: no stream
		s.c.record(s.cc, s.openFailure(s.ctx, s.counter))
	}
}

// openFailure classifies the failure of the attempt whose stream could not
// be opened.
func (s *clientStream) openFailure(ctx context.Context, counter *attemptCounter) *attemptError {
	if r, ok := s.openErr.(*refusal); ok { // the Throttle's: not made, not retried
		e := &attemptError{err: r, reported: r, n: 1}
		e.chain[0] = r
		return e
	}
	return s.attemptFailure(ctx, s.openErr, nil, false, s.timedOut, counter)
}

// attemptFailure classifies err, the failure of an attempt of the stream
// whose timer says ran out (nil without one) and whose counter saw
// grpc-go's retries; trailer and committed are Client.failure's.
func (s *clientStream) attemptFailure(ctx context.Context, err error, trailer metadata.MD, committed bool, ran func() bool, counter *attemptCounter) *attemptError {
	return s.c.failure(ctx, s.method, err, trailer, committed, timedOut(ran, ctx, err), counter.retriedOn(s.cc, s.method))
}

// timedOut reports whether an attempt whose timer says ran out (nil
// without one) failed with err because of it while ctx was live.
func timedOut(ran func() bool, ctx context.Context, err error) bool {
	return ran != nil && ran() && ctx.Err() == nil && timeoutCode(err, true)
}

// errAttemptTimer is the cause with which AttemptTimeout ends a stream's
// attempt.
var errAttemptTimer = errors.New("backoffgrpc: attempt timed out (AttemptTimeout)")

// keeping reports whether the stream keeps the messages sent: it is
// replayable and not committed. s.mu is held.
func (s *clientStream) keeping() bool { return s.replayable && !s.committed }

// keep records m as sent, while the stream keeps them: m is the message
// encoded, or the caller's, which was not (a grpc.PreparedMsg, or one that
// could not be encoded). Past MaxReplayBytes, or for a message not
// encoded, the stream is no longer replayable and keeps nothing. s.mu is
// held.
func (s *clientStream) keep(m any) {
	if !s.keeping() {
		return
	}
	if e, ok := m.(*encoded); ok && s.sentBytes+e.size() <= s.c.maxReplayBytes {
		e.own()
		s.sent = append(s.sent, e)
		s.sentBytes += e.size()
		return
	}
	s.sent, s.sentBytes, s.replayable = nil, 0, false
	if s.pending {
		s.abandon() // the loop would retry with part of the call
	}
}

// commit ends the retries: the calls now go to cur. s.mu is held.
func (s *clientStream) commit() {
	s.committed, s.sent = true, nil
	if s.stop != nil {
		s.stop()
	}
	if s.unwatch != nil {
		s.unwatch()
	}
}

func (s *clientStream) SendMsg(m any) error {
	s.mu.Lock()
	keeping := s.keeping()
	s.mu.Unlock()
	var encodeErr error
	if _, prepared := m.(*grpc.PreparedMsg); keeping && s.codec != nil && !prepared {
		// Encoded now, as it is: the caller may change m once SendMsg
		// returns. A message that cannot be encoded goes as it is, for
		// grpc's SendMsg to fail; so does a grpc.PreparedMsg, encoded
		// already, whose bytes grpc sends as they are (they cannot be
		// kept: it does not show them).
		var e *encoded
		if e, encodeErr = s.codec.encode(m); encodeErr == nil {
			m = e
		}
	}
	s.mu.Lock()
	s.await(&s.replaying) // m goes after the messages sent before it
	if s.final != nil {
		s.mu.Unlock()
		return io.EOF // the status is RecvMsg's
	}
	s.keep(m)
	cs, dead, replayable := s.cur, s.dead, s.replayable
	s.mu.Unlock()
	if dead {
		var err error
		switch {
		case encodeErr != nil && cs == nil:
			// No attempt's stream to fail it: fail it as grpc's
			// SendMsg would.
			err = status.Errorf(codes.Internal, "grpc: error while marshaling: %v", encodeErr)
		case cs != nil && (replayable || encodeErr != nil):
			// grpc's SendMsg on the ended stream checks m as the retry
			// would (its encoding, its size limit after compression),
			// and sends nothing: io.EOF.
			err = cs.SendMsg(m)
		}
		switch {
		case err != nil && err != io.EOF:
			return s.failSend(err)
		case !replayable:
			return io.EOF
		}
		return nil // sent on the retry
	}
	err := cs.SendMsg(m)
	if err != io.EOF {
		if err != nil {
			return s.failSend(err)
		}
		return nil
	}
	// The attempt has ended; RecvMsg will see why. Unless it can be
	// retried, the caller is told as grpc tells it.
	md, _ := cs.Header()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != cs {
		return nil // a retry has sent m again
	}
	if md != nil || s.committed || !s.replayable {
		return io.EOF
	}
	s.dead = true
	return nil
}

// failSend ends the call with err, a SendMsg's failure that is the
// client's own error, which ends the stream (grpc's SendMsg ends it): the
// call, which the caller need not receive, is not retried. The loop runs
// on a goroutine of its own, so that a stream below that was not ended
// after all (an interceptor's error) does not hold SendMsg until it
// answers.
func (s *clientStream) failSend(err error) error {
	s.mu.Lock()
	s.sendFailed = true
	s.mu.Unlock()
	go s.Header()
	return err
}

func (s *clientStream) CloseSend() error {
	s.mu.Lock()
	s.await(&s.replaying)
	s.closed = true
	cs, dead := s.cur, s.dead
	s.mu.Unlock()
	if dead {
		return nil // a retry closes its stream
	}
	return cs.CloseSend()
}

func (s *clientStream) RecvMsg(m any) error {
	return s.run(func(cs grpc.ClientStream) (bool, error) {
		err := cs.RecvMsg(m)
		return err == nil || err == io.EOF, err
	}, func(cs grpc.ClientStream) error {
		err := cs.RecvMsg(m)
		if err == nil || err == io.EOF {
			if err != nil && s.cancel != nil {
				s.cancel() // the stream has ended: free its attempt's context
			}
			return err
		}
		if s.cancel != nil {
			// The attempt's timer may have run out as the first message
			// came, ending the committed stream: say so.
			if timedOut(s.timedOut, s.ctx, err) {
				err = &timeoutError{timeout: s.c.attemptTimeout, err: err}
			}
			s.cancel() // the stream has ended: free its attempt's context
		}
		if _, _, below := readPushback(cs.Trailer()); below {
			// The server said not to retry: say so to a loop around
			// the call and a server interceptor above, as before the
			// commit.
			err = belowFailure(err)
		}
		return err
	})
}

// Header returns the response headers of the attempt that answered, and
// retries as RecvMsg does while there are none. Like grpc's, it returns no
// headers and a nil error for a stream that failed: RecvMsg returns the
// failure.
func (s *clientStream) Header() (metadata.MD, error) {
	s.mu.Lock()
	cs, ended := s.cur, s.final != nil
	s.mu.Unlock()
	if ended && cs != nil {
		return cs.Header() // the answering attempt's, as grpc keeps them
	}
	var md metadata.MD
	var err error // the attempt stream's own Header error
	s.run(func(cs grpc.ClientStream) (bool, error) {
		if md, err = cs.Header(); md != nil || err != nil {
			return true, nil
		}
		// No headers: the attempt ended without them; RecvMsg says how
		// (there can be no message).
		rerr := cs.RecvMsg(new(struct{}))
		return rerr == io.EOF, rerr
	}, func(cs grpc.ClientStream) error {
		md, err = cs.Header()
		return nil
	})
	return md, err
}

func (s *clientStream) Trailer() metadata.MD {
	s.mu.Lock()
	cs := s.cur
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Trailer()
}

func (s *clientStream) Context() context.Context {
	s.mu.Lock()
	cs := s.cur
	s.mu.Unlock()
	if cs == nil {
		return s.ctx
	}
	return cs.Context()
}

// run performs op on the stream: through the retry loop while the call is
// not committed, directly afterwards. try is one attempt of op: whether it
// answered (which commits the call), and its error. direct is op once
// committed.
func (s *clientStream) run(try func(grpc.ClientStream) (bool, error), direct func(grpc.ClientStream) error) error {
	s.mu.Lock()
	s.await(&s.loop) // Header and RecvMsg at once: one runs the loop
	if s.final != nil {
		err := s.final
		s.mu.Unlock()
		return err
	}
	if s.committed {
		cs := s.cur
		s.mu.Unlock()
		return direct(cs)
	}
	// The loop's context ends its wait for a retry that the caller made
	// impossible (see keep): the Budget gets the retry back. The attempts
	// have the caller's context.
	lctx, abandon := context.WithCancel(s.ctx)
	defer abandon()
	s.loop, s.abandon = make(chan struct{}), abandon
	hedge := s.hedges()
	s.mu.Unlock()

	var last error         // op's error when it answered: io.EOF, or the stream's own
	var prev *attemptError // the failure being retried
	unsent := false        // the loop's last call made no attempt
	r, elapsed := s.retrier()
	var err error
	if hedge {
		err, last = s.hedged(lctx)
	} else {
		err = r.Do(lctx, func(context.Context) error {
			ctx := s.ctx
			s.mu.Lock()
			s.pending = false
			if s.failed && !s.replayable {
				// The caller sent past MaxReplayBytes while the loop waited: a
				// retry would send an incomplete call.
				s.mu.Unlock()
				prev.retry, prev.notReplayable, unsent = false, true, true
				return prev
			}
			if s.failed {
				s.failed = false
				s.open(ctx)
			}
			cs, counter, unopened := s.cur, s.counter, s.openErr != nil
			s.mu.Unlock()
			var e *attemptError
			if unopened {
				e = s.openFailure(ctx, counter)
			} else {
				answered, err := try(cs)
				if answered {
					s.c.record(s.cc, nil)
					last = err
					return nil
				}
				md, _ := cs.Header() // the stream has ended: at once
				e = s.attemptFailure(ctx, err, cs.Trailer(), md != nil, s.timedOut, counter)
			}
			e.target = target(s.cc)
			s.mu.Lock()
			switch {
			case !e.retry || e.committed:
			case s.sendFailed:
				e.retry = false
			case !s.replayable:
				e.retry, e.notReplayable = false, true
			case elapsed:
				e.retry, e.elapsed = false, true
			}
			s.dead, s.failed, s.pending = true, true, e.retry
			s.failedAttempt(e)
			s.mu.Unlock()
			prev = e
			return e
		})
	}
	if e, ok := err.(*backoff.Error); ok {
		switch {
		case unsent:
			e.Attempts--
		case e.Attempts == 0: // the context ended before the loop, not before NewStream's attempt
			s.made(e, r, nil)
			s.mu.Lock()
			s.recordUnread()
			s.mu.Unlock()
		case lctx.Err() != nil && s.ctx.Err() == nil: // abandoned
			e.Reason = ErrNotReplayable
			s.mu.Lock()
			if s.sendFailed { // by a message that could not be encoded
				e.Reason = backoff.ErrPermanent
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	close(s.loop)
	s.loop = nil
	s.commit()
	if err != nil {
		s.final = s.c.result(s.ctx, s.start, s.attempts, err)
		if s.cancel != nil {
			s.cancel()
		}
		s.mu.Unlock()
		return s.final
	}
	s.c.result(s.ctx, s.start, s.attempts, nil)
	if last != nil {
		s.final = last
		if s.cancel != nil {
			s.cancel()
		}
	}
	cs := s.cur
	s.mu.Unlock()
	if hedge && last == nil { // the winner answered with its headers: op is still to do
		return direct(cs)
	}
	return last
}

package backoffgrpc

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Hedging makes a [Client] hedge calls instead of retrying them, as gRFC
// A6's hedgingPolicy: unary calls, and streams whose CloseSend returned
// before their first RecvMsg or Header began, their first attempt open and
// not ended, every message kept (MaxReplayBytes) and some of MaxElapsed
// left. That attempt is a stream's first copy; a later one resends the
// kept messages; a copy answers with its response headers, or an OK
// without them. Other streams are retried as without Hedging.
//
// The first copy is sent at once; the next after Delay while none has
// answered, at once after a failure that ShouldRetry would retry, or after
// the server's pushback (a longer one than MaxPushback sends no more,
// unless ClampPushback). The first success wins and the other copies are
// cancelled; a failure not to retry (a committed one too) ends every copy.
// A server's "do not retry" (unless RetryInner), a Budget or Throttle
// refusal and MaxElapsed stop further copies; the copies sent may still
// win (when none does after a Throttle's refusal, the call stops as its
// Throttle doc says). Each copy after the first is a retry of the
// Retrier's loop, past its checks: the Throttle, if any, allows it (the
// first copy is gated as a first try), it withdraws from the Budget,
// OnRetry hears of it (the copies sent, the last failure or
// [ErrHedgeDelay], the delay), and it carries PreviousAttemptsKey, the
// copies before it. The Policy is not used.
//
// A copy after the first decodes into a new reply of the caller's type and
// fills a grpc.Header, grpc.Trailer and grpc.Peer of its own. The call
// returns once the first copy has returned: the winner's reply is copied
// into the caller's (proto.Merge into the reset reply, else the value it
// points to), and the caller's options are filled from the copy whose
// outcome the call returns. A reply that is not a pointer is not hedged.
// An invoker's panic in a copy reaches the caller while the call runs.
// Which backend a copy reaches is the balancer's (docs/grpc.md).
type Hedging struct {
	// Delay is how long a copy may go unanswered before the next one is
	// sent; it must not be negative. Zero means Adaptive's delay.
	Delay time.Duration

	// Adaptive, used when Delay is zero, gives the delay from the
	// latencies that the Client observes, one per call won: the first
	// copy's, or when a later copy won while the first was out, the
	// first's time until then (it would have taken longer); the winner's
	// when the first failed. While it has too few, a copy is sent only
	// after a failure. Nil means a hedge.NewDelay(hedge.Config{}) of the
	// Client's own.
	Adaptive *hedge.Delay

	// MaxAttempts is the number of copies in all, the first included,
	// from 2 to 5; zero means 2.
	MaxAttempts int

	// OnWin, when not nil, is called once per call that sent more than
	// one copy and got a winner, with the winner's number (1 is the first
	// copy), before OnDone. It must be safe for concurrent use.
	OnWin func(ctx context.Context, copy int)
}

// ErrHedgeDelay is the failure that OnRetry hears of before a copy sent
// because no copy answered within the hedging delay.
var ErrHedgeDelay = errors.New("backoffgrpc: no answer within the hedging delay")

// maxCopies is the most copies a Hedging may send: gRFC A6's cap.
const maxCopies = 5

// setupHedging checks h and makes c hedge by it: the hedging loop is a
// Retrier with r's Budget, MaxElapsed, RetryInner and OnRetry, whose
// Policy stops at MaxAttempts copies or a pushback longer than maxWait
// (unless clamp), and never waits itself, so that a copy is sent past the
// checks of the retry loop's retries.
func (c *Client) setupHedging(h Hedging, r *backoff.Retrier, maxWait time.Duration, clamp bool) error {
	switch {
	case h.Delay < 0:
		return &backoff.ParamError{Param: "Hedging.Delay", Value: h.Delay, Reason: "must not be negative"}
	case h.MaxAttempts != 0 && (h.MaxAttempts < 2 || h.MaxAttempts > maxCopies):
		return &backoff.ParamError{Param: "Hedging.MaxAttempts", Value: h.MaxAttempts, Reason: "must be 0 or from 2 to 5"}
	}
	if h.MaxAttempts == 0 {
		h.MaxAttempts = 2
	}
	if h.Delay == 0 && h.Adaptive == nil {
		h.Adaptive, _ = hedge.NewDelay(hedge.Config{}) // the defaults are valid
	}
	c.hedging, c.maxWait = &h, maxWait
	most := h.MaxAttempts
	c.hedger = backoff.Retrier{
		Policy: backoff.PolicyFunc(func(copies int, err error) (time.Duration, error) {
			if copies >= most {
				return 0, backoff.ErrExhausted
			}
			if ae, ok := err.(*attemptError); ok && ae.pushback > maxWait && !clamp {
				return 0, backoff.ErrHintTooLong
			}
			return 0, nil
		}),
		Budget: r.Budget, MaxElapsed: r.MaxElapsed, RetryInner: r.RetryInner,
	}
	if onRetry := r.OnRetry; onRetry != nil {
		c.hedger.OnRetry = func(ctx context.Context, copies int, err error, _ time.Duration) {
			if w, ok := err.(*delayFired); ok {
				onRetry(ctx, copies, ErrHedgeDelay, w.d)
				return
			}
			ae := err.(*attemptError)
			onRetry(ctx, copies, ae.reported, min(ae.pushback, maxWait))
		}
	}
	return nil
}

// delayFired is the failure of a copy unanswered within the delay: a
// reason to send the next copy.
type delayFired struct {
	d      time.Duration
	target string // the ClientConn's, the Throttle's key
}

func (e *delayFired) Error() string   { return ErrHedgeDelay.Error() }
func (e *delayFired) Unwrap() error   { return ErrHedgeDelay }
func (e *delayFired) Retryable() bool { return true }

// copyResult is what one copy's goroutine reports.
type copyResult struct {
	n     int
	took  time.Duration
	err   *attemptError // nil for a success
	panic any
	fell  bool // the invoker panicked with panic
}

// hedging is the state of one hedged call, on the caller's goroutine. A
// Client pools those whose copies have all ended, with their results
// channel, timer and runs (a pool of its own: under testing/synctest, a
// channel belongs to the bubble of the Client that made it).
type hedging struct {
	c       *Client
	u       *unaryCall    // a unary call's
	st      *streamCopies // a stream's
	target  string        // the ClientConn's: the Throttle's key
	results chan copyResult
	timer   *time.Timer
	copies  [maxCopies]*unaryCall // copies[0] is u
	ctxs    [maxCopies]context.Context
	cancels [maxCopies]context.CancelFunc
	runs    [maxCopies]func()        // see newHedging
	opts    []grpc.CallOption        // the caller's, without its Header, Trailer and Peer
	mt      protoreflect.MessageType // the reply's, when a protobuf message
	peer    bool                     // the caller passed a grpc.Peer
	sent    int
	running int
	first   bool      // the first copy is running
	start   time.Time // when the first copy was sent
	delay   time.Duration
	timed   bool          // delay is known
	win     int           // the winner's number; 0 for none
	wait    time.Duration // the pushback of the failure await returned last
	last    *attemptError
	lastN   int // the copy whose failure last is
}

// hedged runs u's call by c's Hedging and returns the loop's outcome (nil
// or a *backoff.Error) and the number of copies sent.
func (u *unaryCall) hedged(ctx context.Context) (int, error) {
	c := u.c
	h, _ := c.hedges.Get().(*hedging)
	if h == nil {
		h = newHedging()
	}
	returned := false
	defer func() {
		if !returned { // a panic: end the copies, and drop h
			h.end()
		}
	}()
	h.c, h.u, h.copies[0], h.target = c, u, u, target(u.cc)
	if m, ok := u.reply.(proto.Message); ok {
		h.mt = m.ProtoReflect().Type()
	}
	h.setDelay()
	err := c.hedger.Do(ctx, h.next)
	if err != nil {
		err = h.rest(ctx, err.(*backoff.Error)) // every stop of Do is one
	}
	h.end()
	sent := h.sent
	if h.win > 1 {
		setReply(u.reply, h.copies[h.win-1].reply)
	}
	if n := cmp.Or(h.win, h.lastN); n > 1 {
		cp := h.copies[n-1]
		fillCaller(u.opts, cp.header, cp.trailer, &cp.peer, h.peer) // u.opts has u's own Header and Trailer unless the caller's
	}
	if h.win != 0 && sent > 1 && c.hedging.OnWin != nil {
		c.hedging.OnWin(ctx, h.win)
	}
	returned = true
	if h.running == 0 { // no copy reads h any more
		clear(h.opts) // the caller's options are not kept alive by the pool
		*h = hedging{results: h.results, timer: h.timer, runs: h.runs, opts: h.opts[:0]}
		c.hedges.Put(h)
	}
	return sent, err
}

// setDelay reads the hedging delay for the call.
func (h *hedging) setDelay() {
	h.delay, h.timed = h.c.hedging.Delay, true
	if d := h.c.hedging.Adaptive; h.c.hedging.Delay == 0 {
		h.delay, h.timed = d.Hedge()
	}
}

// next sends the next copy and waits for what comes first: a winner
// (nil), a failure, or the delay. After a pushback, it first waits that
// long for a winner, a failure to stop at, or the end of the wait.
func (h *hedging) next(ctx context.Context) error {
	if h.wait > 0 {
		h.timer.Reset(min(h.wait, h.c.maxWait))
		err := h.pushedBack(ctx)
		h.timer.Stop()
		if h.wait = 0; err != nil || h.win != 0 {
			return err
		}
	}
	if err := h.send(ctx); err != nil {
		return err
	}
	var fired <-chan time.Time
	if h.timed {
		h.timer.Reset(h.delay)
		fired = h.timer.C
	}
	err := h.await(nil, fired)
	h.timer.Stop()
	return err
}

// pushedBack waits for the timer, set to the server's pushback, and
// returns nil at its end; or, first, a winner's nil (h.win is set), a
// failure not to retry or one whose server said not to retry, or the
// failure before it when the context ends.
func (h *hedging) pushedBack(ctx context.Context) error {
	for {
		before := h.last
		err := h.await(ctx.Done(), h.timer.C)
		switch e := err.(type) {
		case *delayFired:
			return nil
		case *attemptError:
			if !e.retry || !h.c.hedger.RetryInner && backoff.Retried(e) {
				return e
			}
		case nil:
			if h.win != 0 {
				return nil
			}
			return before // the context ended
		}
	}
}

// await waits for the next copy's result, or for fired or done when not
// nil: it returns nil for a winner, in h.win, or the failure; the delay's
// failure when fired; nil when done.
func (h *hedging) await(done <-chan struct{}, fired <-chan time.Time) error {
	select {
	case <-done:
		return nil
	case <-fired:
		h.wait = 0
		return &delayFired{d: h.delay, target: h.target}
	case r := <-h.results:
		h.running--
		h.first = h.first && r.n != 1
		if r.fell {
			panic(r.panic)
		}
		if r.err != nil {
			h.last, h.lastN, h.wait = r.err, r.n, r.err.pushback
			return r.err
		}
		if d := h.c.hedging.Adaptive; h.c.hedging.Delay == 0 {
			d.Observe(h.firstTook(r))
		}
		h.win = r.n
		return nil
	}
}

// firstTook returns the latency to observe when r wins: the first copy's
// time so far when it is still out, a lower bound (so that a straggler
// enters the window above the delay, not as its hedge's time), r's
// otherwise.
func (h *hedging) firstTook(r copyResult) time.Duration {
	if r.n > 1 && h.first {
		return time.Since(h.start)
	}
	return r.took
}

// rest waits, once the loop stopped with stop, for the copies still
// running: the first to win wins. A failure not to retry ends every copy,
// as does the context. Otherwise the call gives up with stop's reason and
// the last failure (after the Throttle's refusal of a copy, the Reason
// throttle.ErrThrottled); after a server's "do not retry" or a pushback
// too long, with that failure.
func (h *hedging) rest(ctx context.Context, stop *backoff.Error) error {
	own := stop.Reason == backoff.ErrRetriedBelow || stop.Reason == backoff.ErrHintTooLong
	ended := ctx.Err() != nil || stop.Reason == backoff.ErrPermanent
	keep, keepN := h.last, h.lastN
	for !ended && h.running > 0 {
		err := h.await(nil, nil)
		if h.win != 0 {
			return nil
		}
		ae := err.(*attemptError)
		switch {
		case ctx.Err() != nil:
			stop.Reason, ended = ctx.Err(), true
		case !ae.retry:
			stop.Reason, ended = backoff.ErrPermanent, true
		case own:
			h.last, h.lastN = keep, keepN
			continue
		}
		keep, keepN = h.last, h.lastN
	}
	if _, ok := stop.Err.(*delayFired); ok || h.last != nil {
		stop.Err = ErrHedgeDelay
		if h.last != nil {
			stop.Err = h.last
		}
	}
	stop.Attempts = h.sent
	return stop
}

// send sends the next copy on a goroutine of its own: the first with the
// caller's reply and options, a later one with its own; or returns the
// Throttle's refusal of the first (the loop's Policy gates the others; a
// stream's first was gated when opened).
func (h *hedging) send(ctx context.Context) error {
	if h.st != nil {
		h.sendStream()
		return nil
	}
	u := h.u
	n := h.sent + 1
	if err := u.c.allow(u.cc, n); err != nil {
		return err
	}
	cp := u
	if n > 1 {
		if n == 2 {
			h.opts, h.peer = ownOptions(h.opts, u.opts[:u.nopts])
		}
		cp = &unaryCall{c: u.c, cc: u.cc, method: u.method, req: u.req, reply: newReply(u.reply, h.mt), invoker: u.invoker, attempts: n - 1}
		cp.headerAddr, cp.trailerAddr = &cp.header, &cp.trailer
		cp.opts = append(append(make([]grpc.CallOption, 0, len(h.opts)+3), h.opts...), grpc.Header(&cp.header), grpc.Trailer(&cp.trailer))
		if h.peer {
			cp.opts = append(cp.opts, grpc.Peer(&cp.peer))
		}
		h.copies[n-1] = cp
	}
	cctx, cancel := context.WithCancel(ctx)
	h.ctxs[n-1], h.cancels[n-1] = cctx, cancel
	if n == 1 {
		h.start = time.Now()
	}
	h.sent, h.running, h.first = n, h.running+1, h.first || n == 1
	go h.runs[n-1]() // a func made once: a go statement with arguments allocates
	return nil
}

// newHedging returns a hedging whose runs[i] makes copy i+1.
func newHedging() *hedging {
	h := &hedging{timer: time.NewTimer(time.Hour), results: make(chan copyResult, maxCopies)}
	h.timer.Stop()
	for i := range h.runs {
		h.runs[i] = func() { h.run(i) }
	}
	return h
}

// run makes copy i+1 of the call, whose state is h.copies[i] and context
// h.ctxs[i], and reports to h.results.
func (h *hedging) run(i int) {
	u, ctx, results, n := h.copies[i], h.ctxs[i], h.results, i+1
	res := copyResult{n: n}
	defer func() {
		if p := recover(); p != nil {
			res.panic, res.fell = p, true
		}
		results <- res
	}()
	start := time.Now()
	if h.st != nil {
		if res.err = h.st.try(ctx, i); res.err != nil {
			res.err.target = h.target // the loop's Policy gates the next copy by it
		}
	} else if u.attempts = n - 1; u.invoke(ctx) != nil { // the Throttle allowed it (see send)
		res.err = u.failed
	}
	res.took = time.Since(start)
}

// end cancels the copies still running and waits for the first, which
// writes the caller's reply and options.
func (h *hedging) end() {
	h.timer.Stop()
	for i, cancel := range h.cancels {
		if cancel != nil {
			cancel()
			h.cancels[i] = nil
		}
	}
	for h.first {
		r := <-h.results
		h.running--
		h.first = r.n != 1
	}
}

// ownOptions returns, in buf, the caller's options opts without its
// grpc.Header, grpc.Trailer and grpc.Peer, and whether it had a grpc.Peer.
func ownOptions(buf, opts []grpc.CallOption) ([]grpc.CallOption, bool) {
	var hadPeer bool
	for _, o := range opts {
		switch o.(type) {
		case grpc.HeaderCallOption, *grpc.HeaderCallOption, grpc.TrailerCallOption, *grpc.TrailerCallOption:
			continue
		case grpc.PeerCallOption, *grpc.PeerCallOption:
			hadPeer = true
			continue
		}
		buf = append(buf, o)
	}
	return buf, hadPeer
}

// fillCaller sets the metadata and peer at every address that the
// caller's grpc.Header, grpc.Trailer and (with hasPeer) grpc.Peer options
// in opts name.
func fillCaller(opts []grpc.CallOption, header, trailer metadata.MD, p *peer.Peer, hasPeer bool) {
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = header
		case *grpc.HeaderCallOption:
			if o != nil {
				*o.HeaderAddr = header
			}
		case grpc.TrailerCallOption:
			*o.TrailerAddr = trailer
		case *grpc.TrailerCallOption:
			if o != nil {
				*o.TrailerAddr = trailer
			}
		case grpc.PeerCallOption:
			if hasPeer {
				*o.PeerAddr = *p
			}
		case *grpc.PeerCallOption:
			if o != nil && hasPeer {
				*o.PeerAddr = *p
			}
		}
	}
}

// hedgeable reports whether a copy can decode into a reply of its own:
// reply is a non-nil pointer.
func hedgeable(reply any) bool {
	v := reflect.ValueOf(reply)
	return v.Kind() == reflect.Pointer && !v.IsNil()
}

// newReply returns a new, empty reply of the type of the caller's reply:
// of mt, its protobuf type, when not nil (read before the first copy
// began: reading it reads the message), else of reply's Go type.
func newReply(reply any, mt protoreflect.MessageType) any {
	if mt != nil {
		return mt.New().Interface()
	}
	return reflect.New(reflect.TypeOf(reply).Elem()).Interface()
}

// setReply makes dst, the caller's reply, hold src, a winner's.
func setReply(dst, src any) {
	if m, ok := dst.(proto.Message); ok {
		proto.Reset(m)
		proto.Merge(m, src.(proto.Message))
		return
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

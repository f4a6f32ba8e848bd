package backoffgrpc

import (
	"cmp"
	"context"
	"io"
	"time"

	"github.com/backoffgo/backoff"
)

// A stream whose caller closed its send side before its first RecvMsg or
// Header, every message kept, is hedged as a unary call (see Hedging) by
// that first RecvMsg or Header: the stream already open is the first copy;
// each later one opens a stream of its own, sends it the kept messages and
// CloseSend. A copy answers when its response headers come (gRFC A6's
// commit), or when it ends with OK without them; the first to answer wins:
// the stream's calls go to it from then on, and the other copies are
// cancelled. Each copy waits for its headers on a goroutine of its own
// (hedging.run), which touches no message of the caller's.

// streamCopies is what the copies of a hedged stream share.
type streamCopies struct {
	s    *clientStream
	msgs []*encoded // the messages to send each copy after the first
	at   [maxCopies]streamAttempt
}

// hedges reports whether the stream's loop, about to begin, hedges it:
// the Client hedges, the caller closed the send side of the stream's first
// attempt, which is open and live, every message was kept, and some of
// MaxElapsed is left. s.mu is held.
func (s *clientStream) hedges() bool {
	return s.c.hedging != nil && s.closed && s.replayable && !s.sendFailed && s.attempts == 1 && s.cur != nil &&
		s.openErr == nil && !s.dead && (s.c.retrier.MaxElapsed == 0 || time.Since(s.start) < s.c.retrier.MaxElapsed)
}

// hedged runs the hedging loop of the stream (see hedges) with ctx, the
// loop's context, and hands the stream to the copy that answered, or to
// the one whose failure ends the call: it returns the loop's outcome, and
// io.EOF for a winner that ended with OK without headers. s.mu is not held.
func (s *clientStream) hedged(ctx context.Context) (err, last error) {
	h := newHedging()
	s.mu.Lock()
	st := &streamCopies{s: s, msgs: s.sent[:len(s.sent):len(s.sent)]}
	st.at[0] = streamAttempt{cs: s.cur, cancel: s.cancel, timedOut: s.timedOut, stop: s.stop, counter: s.counter}
	s.mu.Unlock()
	h.c, h.st, h.target = s.c, st, target(s.cc)
	h.setDelay()
	hr := s.c.hedger
	if hr.MaxElapsed > 0 {
		hr.MaxElapsed -= time.Since(s.start)
	}
	if err = hr.Do(ctx, h.next); err != nil {
		err = h.rest(ctx, err.(*backoff.Error)) // every stop of Do is one
	}
	if h.win != 0 {
		h.cancels[h.win-1] = nil // the winner goes on
	}
	h.end()
	s.mu.Lock()
	if n := cmp.Or(h.win, h.lastN); n > 1 {
		a := &st.at[n-1]
		s.cur, s.openErr, s.cancel, s.timedOut, s.stop, s.counter = a.cs, a.err, a.cancel, a.timedOut, a.stop, a.counter
	}
	if h.sent > 0 {
		s.attempts, s.last = h.sent, cmp.Or(h.last, s.last)
	}
	s.mu.Unlock()
	if h.win != 0 {
		if st.at[h.win-1].eof {
			last = io.EOF
		}
		if h.sent > 1 && s.c.hedging.OnWin != nil {
			s.c.hedging.OnWin(s.ctx, h.win)
		}
	}
	return err, last
}

// sendStream sends the next copy of a hedged stream: the first is open
// already; a later one opens on its goroutine, with a context of its own.
func (h *hedging) sendStream() {
	s, n := h.st.s, h.sent+1
	if n > 1 {
		h.ctxs[n-1], h.cancels[n-1] = context.WithCancel(s.ctx)
	} else {
		h.ctxs[0], h.cancels[0], h.start = s.ctx, h.st.at[0].cancel, time.Now()
	}
	h.sent, h.running, h.first = n, h.running+1, h.first || n == 1
	go h.runs[n-1]()
}

// try makes copy i+1 of the stream on ctx, its context: it opens a later
// copy and sends it the kept messages and CloseSend, then waits for the
// copy's headers. It records the outcome in the Throttle, and returns nil
// when the copy answered, else its failure, having ended it.
func (st *streamCopies) try(ctx context.Context, i int) *attemptError {
	s, a := st.s, &st.at[i]
	if i > 0 {
		*a = s.newAttempt(ctx, i+1)
		if a.err != nil {
			e := s.attemptFailure(ctx, a.err, nil, false, a.timedOut, a.counter)
			s.c.record(s.cc, e)
			return e
		}
		for _, m := range st.msgs {
			if a.cs.SendMsg(m) != nil {
				break // its failure comes from RecvMsg
			}
		}
		a.cs.CloseSend()
	}
	if md, err := a.cs.Header(); md != nil || err != nil {
		s.c.record(s.cc, nil)
		return nil
	}
	// No headers: the copy ended without them; RecvMsg says how (there
	// can be no message).
	err := a.cs.RecvMsg(new(struct{}))
	if a.eof = err == io.EOF; a.eof {
		s.c.record(s.cc, nil)
		return nil
	}
	e := s.attemptFailure(ctx, err, a.cs.Trailer(), false, a.timedOut, a.counter)
	s.c.record(s.cc, e)
	if a.cancel != nil {
		a.stop()
		a.cancel()
	}
	return e
}

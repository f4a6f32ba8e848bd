package backoffsql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/backoffgo/backoff"
)

// Options configures RunTx. The zero value, like a nil *Options, runs the
// driver's default isolation with the default Retrier and the built-in
// classification, and never repeats a COMMIT of unknown outcome. Options
// may be shared by concurrent RunTx calls and must not change meanwhile.
type Options struct {
	// Tx is passed to BeginTx for every attempt: isolation level and
	// read-only. Nil means the driver's defaults.
	Tx *sql.TxOptions

	// Retrier runs the attempts, each one whole transaction: its Policy,
	// Budget, MaxElapsed and hooks apply, the hooks with RunTx's ctx and
	// OnRetry with the error that caused each retry. Nil means
	// [DefaultRetrier]().
	Retrier *backoff.Retrier

	// Idempotent declares that running the function again after a COMMIT
	// that may have succeeded does no harm (it writes with upserts, or
	// checks first whether its work is done). RunTx then retries a COMMIT
	// that failed without an answer too (not one that fn ended itself);
	// the error, when it gives up, still matches ErrCommitUnknown.
	Idempotent bool

	// Classifier, when not nil, is consulted first for every error that
	// BeginTx, fn or Commit returns, database/sql's own among them
	// (driver.ErrBadConn, sql.ErrTxDone): a Class other than Unrecognized
	// is final, and Unrecognized defers to the built-in table and rules.
	// At COMMIT, Transient means not committed and retried, Rejected not
	// committed ([ErrNotCommitted]), Disconnected an unknown outcome. It
	// does not see ctx's own error when ctx ends after fn returned nil:
	// RunTx returns that without committing. It must be safe for
	// concurrent use when the Options are shared.
	Classifier func(err error) Class
}

// RunTx runs fn in a transaction on db and commits it, running the whole
// transaction again from BEGIN as long as an attempt fails in a way that
// another can cure and the Retrier allows. Each attempt begins a
// transaction with opts.Tx, calls fn with it, and commits when fn returns
// nil; on any error it rolls back, also when fn panics (the panic goes on).
// fn must keep to "What fn must do" in the package documentation.
//
// Which failures are retried, by their [Class] (opts.Classifier's first):
//
//   - BeginTx's error: a Transient or Disconnected one (nothing began), but
//     not driver.ErrBadConn, which database/sql has already retried: that
//     one stops the loop with [backoff.ErrRetriedBelow].
//   - fn's error: a Transient or Disconnected one (the database rolled the
//     transaction back, or it died with its connection). fn's own errors
//     (Unrecognized, context.DeadlineExceeded among them also while ctx
//     has not ended) and Rejected ones are returned without a retry.
//     PostgreSQL's "cached plan must not change result type" is retried
//     once per RunTx call, and Rejected the second time.
//   - Commit's error: a Transient one (the database answered, e.g. with a
//     serialization failure, and did not commit). An answer that the
//     transaction rolled back instead (a Rejected error other than an
//     SQLite I/O error, a COMMIT turned into ROLLBACK) matches
//     [ErrNotCommitted] and is not retried. Any other error, without an
//     answer from the database, matches [ErrCommitUnknown] and is retried
//     only when opts.Idempotent is set.
//
// RunTx returns nil once a commit succeeded. Any other result is the
// *[backoff.Error] of the Retrier's loop, also when ctx ended before the
// first attempt (0 attempts, no BeginTx); its last error is the attempt's,
// the driver's, fn's or the COMMIT's, reachable with errors.Is and
// errors.As. Unless it matches ErrCommitUnknown, nothing was committed. A
// Rejected error, a COMMIT not committed and a non-idempotent unknown
// commit carry a method Retryable() that reports false, so a loop around
// RunTx does not retry them either. A nil opts means the zero Options. A
// nil db or fn panics with a *[backoff.ParamError]. RunTx is safe for
// concurrent use, with as many calls at once as db allows connections.
func RunTx(ctx context.Context, db *sql.DB, opts *Options, fn func(ctx context.Context, tx *sql.Tx) error) error {
	switch {
	case db == nil:
		panic(&backoff.ParamError{Param: "db", Value: nil, Reason: "must not be nil"})
	case fn == nil:
		panic(&backoff.ParamError{Param: "fn", Value: nil, Reason: "must not be nil"})
	}
	t := txRun{db: db, fn: fn}
	if opts != nil {
		t.opts = *opts
	}
	r := t.opts.Retrier
	if r == nil {
		r = defaultRetrier
	}
	return r.Do(ctx, t.attempt)
}

// txRun is one RunTx call.
type txRun struct {
	db   *sql.DB
	fn   func(context.Context, *sql.Tx) error
	opts Options

	planRetried bool // a cachedPlan error was retried already
}

// phase says where in a transaction an error arose.
type phase int

const (
	atBegin  phase = iota // BeginTx: opening a connection, sending BEGIN
	inFn                  // fn's statements
	atCommit              // COMMIT
)

// attempt runs one transaction and returns nil, or an error that the
// Retrier retries exactly when the transaction should run again.
func (t *txRun) attempt(ctx context.Context) (err error) {
	tx, err := t.db.BeginTx(ctx, t.opts.Tx)
	if err != nil {
		return t.verdict(ctx, err, atBegin)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback() // the server rolls back anyway if the connection is gone
		}
	}()
	if err = t.fn(ctx, tx); err != nil {
		return t.verdict(ctx, err, inFn)
	}
	if err = ctx.Err(); err != nil {
		return err // not committed: the deferred rollback ends it
	}
	done = true
	if err = tx.Commit(); err != nil {
		return t.commitVerdict(ctx, err)
	}
	return nil
}

// custom returns the Classifier's verdict on err, Unrecognized without a
// Classifier.
func (t *txRun) custom(err error) Class {
	if t.opts.Classifier == nil {
		return Unrecognized
	}
	return t.opts.Classifier(err)
}

// builtin returns the built-in verdict on err. A context.DeadlineExceeded
// is read as the driver's own timeout only in the error of a call RunTx
// made itself: in fn's error it is fn's own. The cached-plan error is
// Transient the first time in a call, Rejected after.
func (t *txRun) builtin(ctx context.Context, err error, p phase) Class {
	c := classOf(err, p != inFn && ctx.Err() == nil, p != atBegin)
	if c == cachedPlan {
		if t.planRetried {
			return Rejected
		}
		t.planRetried = true
		return Transient
	}
	return c
}

// verdict returns the error of BeginTx or fn as the Retrier must see it:
// unchanged when it is to be retried (no allocation on that path), wrapped
// otherwise. Unless the Classifier decides, a driver.ErrBadConn from
// BeginTx, which database/sql has already retried, stops the loop.
func (t *txRun) verdict(ctx context.Context, err error, p phase) error {
	c := t.custom(err)
	if c == Unrecognized {
		if p == atBegin {
			if e := retriedBySQL(err); e != nil {
				return e
			}
		}
		c = t.builtin(ctx, err, p)
	}
	switch c {
	case Transient, Disconnected:
		return retryable(err)
	case Rejected:
		return &rejectedError{err: err}
	}
	return backoff.Permanent(err)
}

// commitVerdict returns the error of Commit as the Retrier must see it:
// retried when the database refused the COMMIT in a way that another run
// can cure, not committed when it is known to have rolled back, unknown
// otherwise.
func (t *txRun) commitVerdict(ctx context.Context, err error) error {
	c := t.custom(err)
	if c == Unrecognized {
		switch {
		case errors.Is(err, sql.ErrTxDone):
			return &commitUnknownError{err: err, why: "fn ended the transaction itself, or the context ended as COMMIT began"}
		case rolledBack(t.db, err):
			return &notCommittedError{err: err}
		case sqliteIOError(err):
			return &commitUnknownError{err: err, idempotent: t.opts.Idempotent}
		}
		c = t.builtin(ctx, err, atCommit)
	}
	switch c {
	case Transient:
		return retryable(err)
	case Rejected:
		return &notCommittedError{err: err}
	}
	return &commitUnknownError{err: err, idempotent: t.opts.Idempotent}
}

// retryable returns err, marked retryable if a mark deeper in its chain
// says otherwise (a Classifier overrode it).
func retryable(err error) error {
	if backoff.Retryable(err) {
		return err
	}
	return &retryableError{err: err}
}

// retryableError is an error that a Classifier declared Transient although
// a mark deeper in its chain says otherwise.
type retryableError struct{ err error }

func (e *retryableError) Error() string   { return e.err.Error() }
func (e *retryableError) Unwrap() error   { return e.err }
func (e *retryableError) Retryable() bool { return true }

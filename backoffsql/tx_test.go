package backoffsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backoffgo/backoff"
	sqlite3 "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mattn"
	modernc "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/modernc"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pgconn"
)

// quick retries at once (1ns apart), up to five attempts.
var quick = &backoff.Retrier{Policy: backoff.Must(backoff.NewExponential(backoff.Config{
	Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 5,
}))}

var (
	errSerialization = &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access"}
	errUnique        = &pgconn.PgError{Severity: "ERROR", Code: "23505", Message: "duplicate key value"}
	errBusy          = modernc.New("database is locked (5) (SQLITE_BUSY)", 5)
	errFunds         = errors.New("insufficient funds")
	errCachedPlan    = &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "cached plan must not change result type", Routine: "RevalidateCachedQuery"}
)

// customErr is a driver's error that only a Classifier knows.
type customErr struct{}

func (customErr) Error() string { return "custom driver: try again" }

func TestRunTx(t *testing.T) {
	tests := []struct {
		name       string
		onBegin    func(int) error
		fnErr      func(run int) error
		onCommit   func(int) error
		idempotent bool
		classifier func(error) Class

		runs, begins, commits, rollbacks int
		reason                           error // nil: success
		match                            error // errors.Is on the result
		unknown                          bool  // matches ErrCommitUnknown
		notCommitted                     bool  // matches ErrNotCommitted
	}{
		{name: "success", runs: 1, begins: 1, commits: 1},
		{name: "serialization failure in fn, then success", fnErr: failFirst(2, errSerialization),
			runs: 3, begins: 3, commits: 1, rollbacks: 2},
		{name: "unique violation in fn: not retried", fnErr: failFirst(9, errUnique),
			runs: 1, begins: 1, rollbacks: 1, reason: backoff.ErrPermanent, match: errUnique},
		{name: "fn's own error: not retried", fnErr: failFirst(9, errFunds),
			runs: 1, begins: 1, rollbacks: 1, reason: backoff.ErrPermanent, match: errFunds},
		{name: "fn's own error marked retryable by a method", fnErr: failFirst(1, &markedErr{true}),
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "connection lost in fn: the transaction runs again", fnErr: failFirst(1, io.ErrUnexpectedEOF),
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "bad connection in fn: database/sql cannot retry in a tx, RunTx does", fnErr: failFirst(1, driver.ErrBadConn),
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "serialization failure at commit: retried", onCommit: failFirst(1, errSerialization),
			runs: 2, begins: 2, commits: 2},
		{name: "bad connection at commit: lib/pq's also after sending it, unknown", onCommit: failFirst(9, driver.ErrBadConn),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, match: driver.ErrBadConn, unknown: true},
		{name: "deferred constraint at commit: not committed, not retried", onCommit: failFirst(9, errUnique),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, match: errUnique, notCommitted: true},
		{name: "commit turned into rollback (pgx): not committed, not retried", onCommit: failFirst(9, errors.New("commit unexpectedly resulted in rollback")),
			idempotent: true, runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, notCommitted: true},
		{name: "commit in a failed transaction (lib/pq): not committed, not retried", onCommit: failFirst(9, fmt.Errorf("tx: %w", errors.New("pq: could not complete operation in a failed transaction"))),
			idempotent: true, runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, notCommitted: true},
		{name: "commit answered with a ROLLBACK tag (lib/pq): not committed, not retried", onCommit: failFirst(9, errors.New("unexpected command tag ROLLBACK")),
			idempotent: true, runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, notCommitted: true},
		{name: "commit answered with another tag (lib/pq): unknown", onCommit: failFirst(9, errors.New("unexpected command tag SELECT")),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "SQLite I/O error at commit (modernc): unknown, not retried", onCommit: failFirst(9, modernc.New("disk I/O error (1034)", 1034)),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "SQLite I/O error at commit (mattn): unknown, not retried", onCommit: failFirst(9, sqlite3.Error{Code: 10, ExtendedCode: 1034}),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "SQLite I/O error at commit, idempotent: retried", onCommit: failFirst(1, fmt.Errorf("commit: %w", &sqlite3.Error{Code: 10, ExtendedCode: 10})),
			idempotent: true, runs: 2, begins: 2, commits: 2},
		{name: "SQLite deferred foreign key at commit: not committed", onCommit: failFirst(9, modernc.New("FOREIGN KEY constraint failed (787)", 787)),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, notCommitted: true},
		{name: "SQLite I/O error in fn: rejected, not retried", fnErr: failFirst(9, modernc.New("disk I/O error (266)", 266)),
			runs: 1, begins: 1, rollbacks: 1, reason: backoff.ErrPermanent},
		{name: "the context's error from a network driver's commit: unknown", onCommit: failFirst(9, context.Canceled),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "FATAL in fn: the session ended, the transaction runs again", fnErr: failFirst(1, &pgconn.PgError{Severity: "FATAL", Code: "XX000"}),
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "FATAL at commit: unknown", onCommit: failFirst(9, &pgconn.PgError{Severity: "FATAL", Code: "XX000"}),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "FATAL at begin (a refused login): not retried", onBegin: failFirst(9, &pgconn.PgError{Severity: "FATAL", Code: "28P01"}),
			runs: 0, begins: 1, reason: backoff.ErrPermanent},
		{name: "a driver's own timeout at begin, the caller's context alive: retried", onBegin: failFirst(2, fmt.Errorf("connect: %w", context.DeadlineExceeded)),
			runs: 1, begins: 3, commits: 1},
		{name: "a deadline in fn's error, the caller's context alive: fn's own, not retried", fnErr: failFirst(1, fmt.Errorf("query: %w", context.DeadlineExceeded)),
			runs: 1, begins: 1, rollbacks: 1, reason: backoff.ErrPermanent, match: context.DeadlineExceeded},
		{name: "a driver's own timeout at commit: unknown", onCommit: failFirst(9, fmt.Errorf("commit: %w", context.DeadlineExceeded)),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "connection lost at commit: unknown, not retried", onCommit: failFirst(9, io.ErrUnexpectedEOF),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, match: io.ErrUnexpectedEOF, unknown: true},
		{name: "pgx's SafeToRetry at commit: not trusted, unknown", onCommit: failFirst(9, &pgconn.ConnError{Msg: "conn closed", Err: errors.New("conn closed"), Safe: true}),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, unknown: true},
		{name: "pgx's SafeToRetry in fn: the transaction runs again", fnErr: failFirst(1, &pgconn.ConnError{Msg: "conn closed", Err: errors.New("conn closed"), Safe: true}),
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "unrecognized error at commit: unknown", onCommit: failFirst(9, errFunds),
			runs: 1, begins: 1, commits: 1, reason: backoff.ErrPermanent, match: errFunds, unknown: true},
		{name: "connection lost at commit, idempotent: retried", onCommit: failFirst(1, io.ErrUnexpectedEOF), idempotent: true,
			runs: 2, begins: 2, commits: 2},
		{name: "connection lost at every commit, idempotent: gives up unknown", onCommit: failFirst(9, io.ErrUnexpectedEOF), idempotent: true,
			runs: 5, begins: 5, commits: 5, reason: backoff.ErrExhausted, unknown: true},
		{name: "busy at begin: retried", onBegin: failFirst(2, errBusy),
			runs: 1, begins: 3, commits: 1},
		{name: "syntax error at begin: not retried", onBegin: failFirst(9, modernc.New("near BEGN: syntax error", 1)),
			runs: 0, begins: 1, reason: backoff.ErrPermanent},
		{name: "bad connection at begin: database/sql retried it, RunTx does not", onBegin: failFirst(99, driver.ErrBadConn),
			runs: 0, begins: 3, reason: backoff.ErrRetriedBelow, match: driver.ErrBadConn},
		{name: "cached plan changed, once: retried", fnErr: failFirst(1, errCachedPlan),
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "cached plan changed in every run: retried once, then rejected", fnErr: failFirst(9, fmt.Errorf("query: %w", errCachedPlan)),
			runs: 2, begins: 2, rollbacks: 2, reason: backoff.ErrPermanent, match: errCachedPlan},
		{name: "classifier: its Transient for the cached plan is not limited to once", fnErr: failFirst(9, errCachedPlan),
			classifier: func(err error) Class {
				if errors.Is(err, errCachedPlan) {
					return Transient
				}
				return Unrecognized
			},
			runs: 5, begins: 5, rollbacks: 5, reason: backoff.ErrExhausted, match: errCachedPlan},
		{name: "cached plan, a classifier deferring to the table: retried once, then rejected", fnErr: failFirst(9, errCachedPlan), classifier: customClass,
			runs: 2, begins: 2, rollbacks: 2, reason: backoff.ErrPermanent, match: errCachedPlan},
		{name: "cached plan at every commit: retried once, then not committed", onCommit: failFirst(9, errCachedPlan),
			runs: 2, begins: 2, commits: 2, reason: backoff.ErrPermanent, match: errCachedPlan, notCommitted: true},
		{name: "cached plan in fn, then at commit: once per call, not once per phase", fnErr: failFirst(1, errCachedPlan), onCommit: failFirst(9, errCachedPlan),
			runs: 2, begins: 2, commits: 1, rollbacks: 1, reason: backoff.ErrPermanent, match: errCachedPlan, notCommitted: true},
		{name: "classifier: transient", fnErr: failFirst(1, customErr{}), classifier: customClass,
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "classifier: unrecognized defers to the table", fnErr: failFirst(1, errSerialization), classifier: customClass,
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "classifier overrides a permanent mark", fnErr: failFirst(1, backoff.Permanent(customErr{})), classifier: customClass,
			runs: 2, begins: 2, commits: 1, rollbacks: 1},
		{name: "classifier rejects a serialization failure", fnErr: failFirst(1, errSerialization),
			classifier: func(error) Class { return Rejected },
			runs:       1, begins: 1, rollbacks: 1, reason: backoff.ErrPermanent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeDB{onBegin: tc.onBegin, onCommit: tc.onCommit}
			db := f.open()
			defer db.Close()
			runs := 0
			err := RunTx(context.Background(), db, &Options{Retrier: quick, Idempotent: tc.idempotent, Classifier: tc.classifier},
				func(ctx context.Context, tx *sql.Tx) error {
					runs++
					if _, err := tx.ExecContext(ctx, "UPDATE x"); err != nil {
						return err
					}
					if tc.fnErr != nil {
						return tc.fnErr(runs)
					}
					return nil
				})
			_, begins, _, commits, rollbacks := f.counts()
			if runs != tc.runs || begins != tc.begins || commits != tc.commits || rollbacks != tc.rollbacks {
				t.Errorf("fn ran %d times, begins %d, commits %d, rollbacks %d; want %d, %d, %d, %d",
					runs, begins, commits, rollbacks, tc.runs, tc.begins, tc.commits, tc.rollbacks)
			}
			if tc.reason == nil {
				if err != nil {
					t.Fatalf("RunTx = %v; want nil", err)
				}
				return
			}
			var be *backoff.Error
			if !errors.As(err, &be) || !errors.Is(be.Reason, tc.reason) {
				t.Fatalf("RunTx = %v; want a *backoff.Error with reason %v", err, tc.reason)
			}
			if tc.match != nil && !errors.Is(err, tc.match) {
				t.Errorf("RunTx = %v; does not match %v", err, tc.match)
			}
			if got := errors.Is(err, ErrCommitUnknown); got != tc.unknown {
				t.Errorf("errors.Is(%v, ErrCommitUnknown) = %v; want %v", err, got, tc.unknown)
			}
			if got := errors.Is(err, ErrNotCommitted); got != tc.notCommitted {
				t.Errorf("errors.Is(%v, ErrNotCommitted) = %v; want %v", err, got, tc.notCommitted)
			}
			if (tc.unknown && !tc.idempotent || tc.notCommitted) && backoff.Retryable(err) {
				t.Errorf("an outer loop would retry %v", err)
			}
		})
	}
}

func customClass(err error) Class {
	if errors.As(err, new(customErr)) {
		return Transient
	}
	return Unrecognized
}

// markedErr is a caller's error that decides for itself, the backoff way.
type markedErr struct{ retry bool }

func (e *markedErr) Error() string   { return "marked" }
func (e *markedErr) Retryable() bool { return e.retry }

// TestBadConnNotMultiplied is the rule that database/sql's own retries of
// driver.ErrBadConn are not multiplied by RunTx's or Classify's: with five
// attempts allowed, the driver still sees database/sql's three tries, and
// only a Retrier with RetryInner multiplies them (the check that the count
// can tell).
func TestBadConnNotMultiplied(t *testing.T) {
	for _, inner := range []bool{false, true} {
		r := *quick
		r.RetryInner = inner
		want := 3
		if inner {
			want = 3 * 5
		}

		f := &fakeDB{onBegin: failFirst(1000, driver.ErrBadConn)}
		db := f.open()
		attempts := 0
		r.OnDone = func(_ context.Context, n int, _ error) { attempts = n }
		err := RunTx(context.Background(), db, &Options{Retrier: &r}, func(context.Context, *sql.Tx) error {
			t.Error("fn ran without a transaction")
			return nil
		})
		db.Close()
		connects, begins, _, _, _ := f.counts()
		if begins != want || connects != want {
			t.Errorf("RetryInner=%v: RunTx: %d BeginTx and %d connections for %d attempts; want %d", inner, begins, connects, attempts, want)
		}
		if !errors.Is(err, driver.ErrBadConn) || inner == stoppedBelow(err) {
			t.Errorf("RetryInner=%v: RunTx = %v", inner, err)
		}

		f = &fakeDB{onExec: failFirst(1000, driver.ErrBadConn)}
		db = f.open()
		err = r.Do(context.Background(), func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "UPDATE x")
			return Classify(err)
		})
		db.Close()
		_, _, execs, _, _ := f.counts()
		if execs != want {
			t.Errorf("RetryInner=%v: Do(Classify(db.ExecContext)): %d executions; want %d", inner, execs, want)
		}
		if !errors.Is(err, driver.ErrBadConn) || inner == stoppedBelow(err) {
			t.Errorf("RetryInner=%v: Do = %v", inner, err)
		}
	}
}

// stoppedBelow reports whether err is a *backoff.Error whose loop stopped
// with ErrRetriedBelow.
func stoppedBelow(err error) bool {
	var be *backoff.Error
	return errors.As(err, &be) && be.Reason == backoff.ErrRetriedBelow
}

// TestRunTxOuterLoop: a loop around RunTx retries neither a rejected
// transaction nor an unknown commit, and by the nested-loop rule stops with
// ErrRetriedBelow when RunTx retried and gave up.
func TestRunTxOuterLoop(t *testing.T) {
	outer := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 3}))
	tests := []struct {
		name     string
		onCommit func(int) error
		fnErr    error
		reason   error
		runs     int
	}{
		{name: "rejected", fnErr: errUnique, reason: backoff.ErrPermanent, runs: 1},
		{name: "commit unknown", onCommit: failFirst(99, io.ErrUnexpectedEOF), reason: backoff.ErrPermanent, runs: 1},
		{name: "inner exhausted", fnErr: errSerialization, reason: backoff.ErrRetriedBelow, runs: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeDB{onCommit: tc.onCommit}
			db := f.open()
			defer db.Close()
			runs := 0
			err := backoff.Do(context.Background(), func(ctx context.Context) error {
				return RunTx(ctx, db, &Options{Retrier: quick}, func(context.Context, *sql.Tx) error {
					runs++
					return tc.fnErr
				})
			}, outer)
			var be *backoff.Error
			if !errors.As(err, &be) || be.Reason != tc.reason || be.Attempts != 1 || runs != tc.runs {
				t.Errorf("outer Do = %v (fn ran %d times); want reason %v after 1 attempt, %d runs", err, runs, tc.reason, tc.runs)
			}
		})
	}
}

func TestRunTxPanicRollsBack(t *testing.T) {
	f := &fakeDB{}
	db := f.open()
	defer db.Close()
	func() {
		defer func() {
			if recover() != "boom" {
				t.Error("the panic did not go on")
			}
		}()
		_ = RunTx(context.Background(), db, nil, func(context.Context, *sql.Tx) error { panic("boom") })
	}()
	if _, begins, _, commits, rollbacks := f.counts(); begins != 1 || commits != 0 || rollbacks != 1 {
		t.Errorf("begins %d, commits %d, rollbacks %d; want 1, 0, 1", begins, commits, rollbacks)
	}
}

func TestRunTxContextEndedBeforeCommit(t *testing.T) {
	f := &fakeDB{}
	db := f.open()
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	err := RunTx(ctx, db, nil, func(context.Context, *sql.Tx) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCommitUnknown) {
		t.Errorf("RunTx = %v; want context.Canceled, not an unknown commit", err)
	}
	if _, _, _, commits, _ := f.counts(); commits != 0 {
		t.Errorf("%d commits after the context ended; want 0", commits)
	}
}

// TestRunTxFnDeadline: fn's own deadline, of a sub-context it made for work
// outside the database, is fn's error, returned after one run with the
// default Retrier (which would otherwise run fn 30 times); a driver's
// timeout at BeginTx, while the caller's context is alive, is still retried.
func TestRunTxFnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeDB{}
		db := f.open()
		defer db.Close()
		runs := 0
		err := RunTx(context.Background(), db, nil, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			sub, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			<-sub.Done() // a slow call outside the database
			return fmt.Errorf("rate lookup: %w", sub.Err())
		})
		if runs != 1 || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, backoff.ErrPermanent) {
			t.Errorf("fn ran %d times, RunTx = %v; want 1 run, stopped with fn's deadline as not retryable", runs, err)
		}

		f = &fakeDB{onBegin: failFirst(2, fmt.Errorf("connect: %w", context.DeadlineExceeded))}
		db2 := f.open()
		defer db2.Close()
		if err := RunTx(context.Background(), db2, nil, func(context.Context, *sql.Tx) error { return nil }); err != nil {
			t.Errorf("RunTx after two driver timeouts at BeginTx = %v; want nil", err)
		}
		if _, begins, _, commits, _ := f.counts(); begins != 3 || commits != 1 {
			t.Errorf("begins %d, commits %d; want 3, 1", begins, commits)
		}
	})
}

// TestRunTxFnCommits: fn that commits the transaction itself leaves RunTx
// unable to know the outcome: ErrCommitUnknown, which no loop retries, with
// Idempotent too.
func TestRunTxFnCommits(t *testing.T) {
	for _, end := range []func(*sql.Tx) error{(*sql.Tx).Commit, (*sql.Tx).Rollback} {
		f := &fakeDB{}
		db := f.open()
		runs := 0
		err := RunTx(context.Background(), db, &Options{Retrier: quick, Idempotent: true}, func(ctx context.Context, tx *sql.Tx) error {
			runs++
			return end(tx)
		})
		db.Close()
		if runs != 1 || !errors.Is(err, ErrCommitUnknown) || !errors.Is(err, sql.ErrTxDone) || backoff.Retryable(err) {
			t.Errorf("RunTx = %v (retryable %v) after %d runs; want ErrCommitUnknown, not retryable, after 1", err, backoff.Retryable(err), runs)
		}
	}
}

func TestRunTxParams(t *testing.T) {
	f := &fakeDB{}
	db := f.open()
	defer db.Close()
	for name, call := range map[string]func(){
		"db": func() { _ = RunTx(context.Background(), nil, nil, func(context.Context, *sql.Tx) error { return nil }) },
		"fn": func() { _ = RunTx(context.Background(), db, nil, nil) },
	} {
		func() {
			defer func() {
				pe, ok := recover().(*backoff.ParamError)
				if !ok || pe.Param != name {
					t.Errorf("nil %s: panic %v; want a *backoff.ParamError for %s", name, pe, name)
				}
			}()
			call()
		}()
	}
}

// TestRunTxAllocs: on success RunTx allocates nothing beyond what
// database/sql allocates for the same transaction written by hand.
func TestRunTxAllocs(t *testing.T) {
	f := &fakeDB{}
	db := f.open()
	defer db.Close()
	ctx := context.Background()
	work := func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE x")
		return err
	}
	opts := &Options{Retrier: quick}
	hand := func() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := work(ctx, tx); err != nil {
			_ = tx.Rollback()
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	helped := func() {
		if err := RunTx(ctx, db, opts, work); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	// database/sql starts a goroutine per transaction (Tx.awaitDone), which
	// allocates when the previous one has not exited yet: each iteration
	// yields to let it exit, and each side's best of five rounds is compared.
	byHand, helper := math.Inf(1), math.Inf(1)
	for range 5 {
		byHand = min(byHand, testing.AllocsPerRun(200, hand))
		helper = min(helper, testing.AllocsPerRun(200, helped))
	}
	if helper > byHand {
		t.Errorf("RunTx allocates %.1f times per transaction; by hand %.1f", helper, byHand)
	}
	t.Logf("allocations per transaction: by hand %.1f, RunTx %.1f", byHand, helper)
}

// TestErrorTexts: the wrappers read as the error they wrap; an unknown
// commit says so first.
func TestErrorTexts(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&commitUnknownError{err: io.ErrUnexpectedEOF}, "backoffsql: commit outcome unknown: unexpected EOF"},
		{&commitUnknownError{err: sql.ErrTxDone, why: "fn ended it"}, "backoffsql: commit outcome unknown: fn ended it: " + sql.ErrTxDone.Error()},
		{&notCommittedError{err: errUnique}, "backoffsql: not committed: " + errUnique.Error()},
		{&rejectedError{err: errUnique}, errUnique.Error()},
		{&retriedBelowError{err: driver.ErrBadConn}, driver.ErrBadConn.Error()},
		{&retryableError{err: errFunds}, errFunds.Error()},
		{Classify(errUnique), errUnique.Error()},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%T.Error() = %q; want %q", tc.err, got, tc.want)
		}
	}
}

// TestClassifierSeesEveryError: a Classifier that answers Transient to
// everything is consulted for database/sql's own errors too, BeginTx's
// driver.ErrBadConn (which database/sql has already tried three times) and
// Commit's sql.ErrTxDone (fn committed itself), and its verdict decides;
// the one error of an attempt that it never sees is the context's own,
// when the context ends after fn returned nil (RunTx returns it without a
// COMMIT).
func TestClassifierSeesEveryError(t *testing.T) {
	tests := []struct {
		name          string
		onBegin       func(int) error
		fn            func(run int, tx *sql.Tx, cancel func()) error
		seen          error // the one error the Classifier must see, or nil
		runs, begins  int
		wantCancelled bool
	}{
		{name: "BeginTx's driver.ErrBadConn", onBegin: failFirst(3, driver.ErrBadConn), seen: driver.ErrBadConn,
			runs: 1, begins: 4},
		{name: "Commit's sql.ErrTxDone", fn: func(run int, tx *sql.Tx, _ func()) error {
			if run == 1 {
				return tx.Commit()
			}
			return nil
		}, seen: sql.ErrTxDone, runs: 2, begins: 2},
		{name: "the context's end after fn", fn: func(_ int, _ *sql.Tx, cancel func()) error {
			cancel()
			return nil
		}, runs: 1, begins: 1, wantCancelled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeDB{onBegin: tc.onBegin}
			db := f.open()
			defer db.Close()
			var seen []error
			everything := func(err error) Class {
				seen = append(seen, err)
				return Transient
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runs := 0
			err := RunTx(ctx, db, &Options{Retrier: quick, Classifier: everything}, func(ctx context.Context, tx *sql.Tx) error {
				runs++
				if tc.fn != nil {
					return tc.fn(runs, tx, cancel)
				}
				return nil
			})
			if tc.wantCancelled != errors.Is(err, context.Canceled) || !tc.wantCancelled && err != nil {
				t.Errorf("RunTx = %v; want nil, or context.Canceled when the context ended (%v)", err, tc.wantCancelled)
			}
			if tc.seen == nil && len(seen) != 0 || tc.seen != nil && (len(seen) != 1 || !errors.Is(seen[0], tc.seen)) {
				t.Errorf("the Classifier saw %v; want %v", seen, tc.seen)
			}
			if _, begins, _, _, _ := f.counts(); runs != tc.runs || begins != tc.begins {
				t.Errorf("fn ran %d times, begins %d; want %d, %d", runs, begins, tc.runs, tc.begins)
			}
		})
	}
}

// TestRunTxGiveUpIsBackoffError: every failure RunTx returns once its loop
// began is the Retrier's *backoff.Error, the one OnDone sees, with the
// attempts made and the last attempt's error in its chain, for the ends
// that do not come from a verdict (TestRunTx has those): a context that
// ended before the first attempt (no BeginTx, 0 attempts, its cause kept),
// after fn returned nil (no COMMIT), or during a wait; a budget's refusal;
// MaxElapsed; and fn ending the transaction itself.
func TestRunTxGiveUpIsBackoffError(t *testing.T) {
	errCause := errors.New("the request was abandoned")
	tests := []struct {
		name     string
		retrier  func(r *backoff.Retrier) // changes a copy of quick
		ctx      func(t *testing.T) (context.Context, context.CancelFunc)
		fn       func(run int, tx *sql.Tx, cancel context.CancelFunc) error
		reason   error
		match    []error // errors.Is on RunTx's error
		attempts int
		begins   int
	}{
		{name: "context ended before the first attempt",
			ctx: func(*testing.T) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancelCause(context.Background())
				cancel(errCause)
				return ctx, func() {}
			},
			reason: context.Canceled, match: []error{context.Canceled, errCause}, attempts: 0, begins: 0},
		{name: "deadline passed before the first attempt",
			ctx: func(*testing.T) (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Unix(0, 0))
			},
			reason: context.DeadlineExceeded, match: []error{context.DeadlineExceeded}, attempts: 0, begins: 0},
		{name: "context ended after fn returned nil",
			fn: func(_ int, _ *sql.Tx, cancel context.CancelFunc) error {
				cancel()
				return nil
			},
			reason: context.Canceled, match: []error{context.Canceled}, attempts: 1, begins: 1},
		{name: "context ended during the wait",
			retrier: func(r *backoff.Retrier) {
				r.Policy = backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Hour, Cap: time.Hour, MaxAttempts: 5}))
			},
			ctx: func(*testing.T) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Minute)
			},
			fn:     func(int, *sql.Tx, context.CancelFunc) error { return errSerialization },
			reason: context.DeadlineExceeded, match: []error{context.DeadlineExceeded, errSerialization}, attempts: 1, begins: 1},
		{name: "the budget refused the retry",
			retrier: func(r *backoff.Retrier) {
				r.Budget = backoff.Must(backoff.NewBudget(backoff.BudgetConfig{Ratio: 0.01, Reserve: 0.01, Burst: 1}))
			},
			fn:     func(int, *sql.Tx, context.CancelFunc) error { return errSerialization },
			reason: backoff.ErrBudget, match: []error{errSerialization}, attempts: 2, begins: 2},
		{name: "MaxElapsed",
			retrier: func(r *backoff.Retrier) {
				r.Policy = backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Hour, Cap: time.Hour, MaxAttempts: 5}))
				r.MaxElapsed = time.Minute
			},
			fn:     func(int, *sql.Tx, context.CancelFunc) error { return errSerialization },
			reason: backoff.ErrDeadline, match: []error{errSerialization}, attempts: 1, begins: 1},
		{name: "fn committed itself",
			fn:     func(_ int, tx *sql.Tx, _ context.CancelFunc) error { return tx.Commit() },
			reason: backoff.ErrPermanent, match: []error{ErrCommitUnknown, sql.ErrTxDone}, attempts: 1, begins: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeDB{}
				db := f.open()
				defer db.Close()
				r := *quick
				if tc.retrier != nil {
					tc.retrier(&r)
				}
				var done error
				r.OnDone = func(_ context.Context, _ int, err error) { done = err }
				ctx, cancel := context.WithCancel(context.Background())
				if tc.ctx != nil {
					ctx, cancel = tc.ctx(t)
				}
				defer cancel()
				runs := 0
				err := RunTx(ctx, db, &Options{Retrier: &r}, func(ctx context.Context, tx *sql.Tx) error {
					runs++
					if tc.fn != nil {
						return tc.fn(runs, tx, cancel)
					}
					return nil
				})
				var be *backoff.Error
				if !errors.As(err, &be) || err != be || done != err {
					t.Fatalf("RunTx = %#v, OnDone saw %v; want the same *backoff.Error", err, done)
				}
				if !errors.Is(be.Reason, tc.reason) || be.Attempts != tc.attempts {
					t.Errorf("RunTx = %v: reason %v after %d attempts; want %v after %d", err, be.Reason, be.Attempts, tc.reason, tc.attempts)
				}
				for _, m := range tc.match {
					if !errors.Is(err, m) {
						t.Errorf("RunTx = %v; does not match %v", err, m)
					}
				}
				if _, begins, _, _, _ := f.counts(); begins != tc.begins {
					t.Errorf("begins %d; want %d", begins, tc.begins)
				}
			})
		})
	}
}

package backoffsql

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
)

// The two outcomes of a failed COMMIT that RunTx reports distinctly. Any
// other error from RunTx also means that nothing was committed, as long as
// fn keeps to what the package documentation says it must do.
var (
	// ErrCommitUnknown matches, with errors.Is, the error of a transaction
	// whose outcome RunTx cannot know: its COMMIT failed without an answer
	// from the database (the connection dropped, the context ended during
	// COMMIT) or with an SQLite I/O error (after which SQLite may or may
	// not have rolled back), or fn ended the transaction itself. It may or
	// may not have been applied. The driver's error is in the same chain.
	ErrCommitUnknown = errors.New("backoffsql: commit outcome unknown")

	// ErrNotCommitted matches, with errors.Is, the error of a transaction
	// whose COMMIT the database or the driver answered with a rollback: a
	// Rejected error other than an SQLite I/O error (a deferred
	// constraint), a COMMIT turned into ROLLBACK because an earlier error,
	// which fn did not return, had aborted the transaction, or an SQLite
	// COMMIT that the context interrupted. Nothing was committed, and
	// RunTx does not run fn again. The driver's error is in the same chain.
	ErrNotCommitted = errors.New("backoffsql: not committed")
)

// commitUnknownError is the error of a COMMIT of unknown outcome.
type commitUnknownError struct {
	err        error
	why        string // what happened, when err does not say
	idempotent bool
}

func (e *commitUnknownError) Error() string {
	if e.why != "" {
		return ErrCommitUnknown.Error() + ": " + e.why + ": " + e.err.Error()
	}
	return ErrCommitUnknown.Error() + ": " + e.err.Error()
}
func (e *commitUnknownError) Unwrap() error        { return e.err }
func (e *commitUnknownError) Is(target error) bool { return target == ErrCommitUnknown }
func (e *commitUnknownError) Retryable() bool      { return e.idempotent }

// notCommittedError is the error of a COMMIT known to have rolled back.
type notCommittedError struct{ err error }

func (e *notCommittedError) Error() string        { return ErrNotCommitted.Error() + ": " + e.err.Error() }
func (e *notCommittedError) Unwrap() error        { return e.err }
func (e *notCommittedError) Is(target error) bool { return target == ErrNotCommitted }
func (e *notCommittedError) Retryable() bool      { return false }

// rolledBack reports whether err, from db's COMMIT, says the transaction
// rolled back without any doubt: a driver's report that an earlier error
// had aborted it, or the context's own error from an SQLite driver, which
// runs in the process, interrupts the COMMIT and rolls back (a network
// driver returns the same error for a COMMIT it sent and stopped waiting
// for).
func rolledBack(db *sql.DB, err error) bool {
	if turnedIntoRollback(err) {
		return true
	}
	if err != context.Canceled && err != context.DeadlineExceeded {
		return false
	}
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.PkgPath() {
	case "modernc.org/sqlite", "github.com/mattn/go-sqlite3":
		return true
	}
	return false
}

package backoffsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"reflect"
	"strings"
	"syscall"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/internal/errchain"
)

// Class is a verdict on a database error: what running the work again can
// achieve.
type Class int

const (
	// Unrecognized: nothing in the error's chain says. The caller's own
	// errors are in this class; neither RunTx nor Classify retries them.
	// A Classifier returns it to defer to the built-in table.
	Unrecognized Class = iota

	// Rejected: the database answered with an error that running the work
	// again will not cure (a constraint violation, a syntax error, a
	// permission). Never retried. At COMMIT it means the transaction did
	// not commit ([ErrNotCommitted]), except for an SQLite I/O error,
	// whose outcome is unknown ([ErrCommitUnknown]).
	Rejected

	// Transient: the database refused or rolled back the work, none of it
	// was applied, and running it again can succeed (a serialization
	// failure, a deadlock, a busy or locked database, a connection
	// refused). Retried, at COMMIT too.
	Transient

	// Disconnected: the connection failed while a statement was in flight,
	// so whether that statement took effect is unknown. Before COMMIT the
	// transaction dies with its connection and RunTx runs it again; at
	// COMMIT it is an unknown outcome ([ErrCommitUnknown]); Classify does
	// not retry it.
	Disconnected
)

// String returns the class's name.
func (c Class) String() string {
	switch c {
	case Unrecognized:
		return "Unrecognized"
	case Rejected:
		return "Rejected"
	case Transient:
		return "Transient"
	case Disconnected:
		return "Disconnected"
	}
	return "Class(invalid)"
}

// cachedPlan is the built-in verdict on PostgreSQL's "cached plan must not
// change result type": Transient, but RunTx retries it once per call (see
// docs/sql.md). ClassOf reports it as Transient.
const cachedPlan Class = -1

// ClassOf returns the built-in verdict on err, as tabled in the package
// documentation: the first error in err's chain (Unwrap() error and
// Unwrap() []error, depth first, as errors.As finds it, inner loops'
// *backoff.Error included) that carries a database code, a connection
// failure or a method Retryable() bool decides. A nil err, and any err whose
// chain holds context.Canceled or context.DeadlineExceeded, are
// Unrecognized; an err that [backoff.Retryable] reports as not retryable (a
// [backoff.Permanent] mark) is Rejected. ClassOf is safe for concurrent use.
func ClassOf(err error) Class {
	if c := classOf(err, false, false); c != cachedPlan {
		return c
	}
	return Transient
}

// classOf is ClassOf with what RunTx knows besides err. When driverTimeout
// (err comes from a call RunTx made itself, BeginTx or Commit, while the
// caller's context had not ended), a context.DeadlineExceeded in err's chain
// is the driver's own timeout, not a deadline of the caller's: Disconnected.
// When inTx (the error comes from a transaction's statement or COMMIT, not
// from opening a connection), a PostgreSQL error of severity FATAL or PANIC
// is Disconnected: the server ended the session.
func classOf(err error, driverTimeout, inTx bool) Class {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return Unrecognized
	case errors.Is(err, context.DeadlineExceeded):
		if driverTimeout {
			return Disconnected
		}
		return Unrecognized
	case !backoff.Retryable(err):
		return Rejected
	case inTx && fatal(err):
		return Disconnected
	}
	return walk(err, node)
}

// walk returns the verdict of the first error in err's chain for which
// decide returns a Class other than Unrecognized.
func walk(err error, decide func(error) Class) (c Class) {
	errchain.Walk(err, func(err error) errchain.Step {
		if c = decide(err); c != Unrecognized {
			return errchain.Stop
		}
		return errchain.Continue
	})
	return c
}

// node returns the verdict of err itself, not of what it wraps.
func node(err error) Class {
	switch err {
	case driver.ErrBadConn, // lib/pq's also for a COMMIT it sent
		io.EOF, io.ErrUnexpectedEOF:
		return Disconnected
	}
	if errchain.IsPlain(err) {
		// Drivers' sentinels made with errors.New: only their text tells.
		if err.Error() == "invalid connection" { // go-sql-driver/mysql's ErrInvalidConn
			return Disconnected
		}
		return Unrecognized
	}
	if errno, ok := err.(syscall.Errno); ok {
		switch errno {
		case syscall.ECONNREFUSED:
			return Transient
		case syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED:
			return Disconnected
		}
		return Unrecognized
	}
	if e, ok := err.(interface{ Retryable() bool }); ok {
		if e.Retryable() {
			return Transient
		}
		return Rejected
	}
	if e, ok := err.(interface{ SQLState() string }); ok {
		return pgClass(e.SQLState(), err)
	}
	if code, ok := sqliteCode(err); ok {
		return sqliteClass(code)
	}
	if e, ok := err.(interface{ SafeToRetry() bool }); ok && e.SafeToRetry() {
		// pgx's "nothing was sent". Not trusted further than a connection
		// failure: pgx v5.12.0 says so also of a COMMIT it sent whose
		// answer the cut connection lost ("conn closed").
		return Disconnected
	}
	if c := byShape(err); c != Unrecognized {
		return c
	}
	if e, ok := err.(interface{ Timeout() bool }); ok && e.Timeout() {
		return Disconnected
	}
	return Unrecognized
}

// fatal reports whether the first PostgreSQL error (a method SQLState()
// string) in err's chain has severity FATAL or PANIC: the server ended the
// session. The severity is read from the field SeverityUnlocalized (pgx),
// else Severity (pgx, lib/pq).
func fatal(err error) bool {
	return walk(err, func(err error) Class {
		if _, ok := err.(interface{ SQLState() string }); !ok {
			return Unrecognized
		}
		severity := stringField(err, "SeverityUnlocalized")
		if severity == "" {
			severity = stringField(err, "Severity")
		}
		if severity == "FATAL" || severity == "PANIC" {
			return Disconnected
		}
		return Rejected
	}) == Disconnected
}

// stringField returns the value of the string field called name of the
// struct that err is or points to, or "" when it has no such field.
func stringField(err error, name string) string {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

// sqliteCode returns the result code of err itself, not of what it wraps,
// when err is an SQLite driver's error: a method Code() int on a type named
// Error (modernc.org/sqlite) or a field Code of type ErrNo
// (mattn/go-sqlite3).
func sqliteCode(err error) (code int64, ok bool) {
	if typeName(err) != "Error" {
		return 0, false
	}
	if e, ok := err.(interface{ Code() int }); ok {
		return int64(e.Code()), true
	}
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, false
	}
	if f := v.FieldByName("Code"); f.IsValid() && f.Type().Name() == "ErrNo" && f.CanInt() {
		return f.Int(), true
	}
	return 0, false
}

// sqliteIOError reports whether the first SQLite error in err's chain is an
// I/O error, SQLITE_IOERR or one of its extended codes. At COMMIT it leaves
// the outcome unknown: SQLite may or may not have rolled the transaction
// back (sqlite.org/c3ref/get_autocommit.html), and a commit that reached
// the database file before the failing write or sync may stand.
func sqliteIOError(err error) bool {
	return walk(err, func(err error) Class {
		code, ok := sqliteCode(err)
		switch {
		case !ok:
			return Unrecognized
		case code&0xff == 10: // SQLITE_IOERR
			return Disconnected
		}
		return Rejected
	}) == Disconnected
}

// turnedIntoRollback reports whether err's chain holds a driver's report
// that COMMIT rolled back because an earlier error had aborted the
// transaction: pgx's ErrTxCommitRollback, lib/pq's ErrInFailedTransaction
// and its "unexpected command tag ROLLBACK" (the server's answer to
// COMMIT), errors.New values that only their text tells.
func turnedIntoRollback(err error) bool {
	return walk(err, func(err error) Class {
		if errchain.IsPlain(err) {
			switch err.Error() {
			case "commit unexpectedly resulted in rollback", // pgx
				"pq: could not complete operation in a failed transaction", // lib/pq
				"unexpected command tag ROLLBACK":                          // lib/pq: the server answered COMMIT with ROLLBACK
				return Rejected
			}
		}
		return Unrecognized
	}) == Rejected
}

// typeName returns the name of err's type, or of the type it points to.
func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// byShape reads the codes of driver errors that have no method for them and
// that sqliteCode does not read: go-sql-driver/mysql's MySQLError.Number
// (uint16), with its Message, and an older lib/pq's Error.Code (ErrorCode,
// a string).
func byShape(err error) Class {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return Unrecognized
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return Unrecognized
	}
	switch v.Type().Name() {
	case "MySQLError":
		if f := v.FieldByName("Number"); f.IsValid() && f.Kind() == reflect.Uint16 {
			return mysqlClass(uint16(f.Uint()), stringField(err, "Message"))
		}
	case "Error":
		if f := v.FieldByName("Code"); f.IsValid() && f.Type().Name() == "ErrorCode" && f.Kind() == reflect.String {
			return pgClass(f.String(), err)
		}
	}
	return Unrecognized
}

// pgClass classifies a SQLSTATE (PostgreSQL 15 docs, Appendix A, and the
// server's errcodes.txt) of err, a PostgreSQL error whose field Routine,
// when it has one, names the server's function that raised it.
func pgClass(code string, err error) Class {
	switch code {
	case "40001", // serialization_failure
		"40P01", // deadlock_detected
		"55P03", // lock_not_available
		"53300", // too_many_connections
		"57P03", // cannot_connect_now
		"72000", // snapshot_too_old
		"08001", // sqlclient_unable_to_establish_sqlconnection
		"08004": // sqlserver_rejected_establishment_of_sqlconnection
		return Transient
	case "57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P05", // idle_session_timeout
		"25P03", // idle_in_transaction_session_timeout
		"25P04", // transaction_timeout (PostgreSQL 17)
		"40003": // statement_completion_unknown
		return Disconnected
	case "0A000": // feature_not_supported
		// "cached plan must not change result type", raised by
		// plancache.c's RevalidateCachedQuery (a field that lc_messages
		// does not translate): a prepared statement whose result columns
		// changed under it.
		if stringField(err, "Routine") == "RevalidateCachedQuery" {
			return cachedPlan
		}
		return Rejected
	case "57014": // query_canceled: statement_timeout, or a cancel request
		return Rejected
	}
	if len(code) == 5 && code[:2] == "08" { // connection_exception
		return Disconnected
	}
	if len(code) != 5 || code[:2] == "00" { // not a SQLSTATE, or successful_completion
		return Unrecognized
	}
	return Rejected
}

// sqliteClass classifies a result code, primary or extended (sqlite.org/rescode.html).
func sqliteClass(code int64) Class {
	switch code & 0xff {
	case 0: // SQLITE_OK: not an error
		return Unrecognized
	case 5, // SQLITE_BUSY
		6,  // SQLITE_LOCKED
		15: // SQLITE_PROTOCOL
		return Transient
	}
	return Rejected
}

// mysqlClass classifies a server error number, with the error's message,
// by the MariaDB server's error reference (sql/share/errmsg-utf8.txt) and
// MySQL's Server Error Message Reference.
func mysqlClass(number uint16, message string) Class {
	switch number {
	case 1213, // ER_LOCK_DEADLOCK
		1205, // ER_LOCK_WAIT_TIMEOUT
		1020, // ER_CHECKREAD: record changed since last read (MariaDB innodb_snapshot_isolation)
		1412, // ER_TABLE_DEF_CHANGED: "please retry transaction"
		1040, // ER_CON_COUNT_ERROR: too many connections
		1203, // ER_TOO_MANY_USER_CONNECTIONS: the server's max_user_connections
		1637, // ER_TOO_MANY_CONCURRENT_TRXS
		1689, // ER_LOCK_ABORTED: a lock wait aborted for a pending exclusive lock
		3101, // ER_TRANSACTION_ROLLBACK_DURING_COMMIT (MySQL: a group replication conflict)
		3572: // ER_LOCK_NOWAIT (MySQL; MariaDB answers NOWAIT with 1205)
		return Transient
	case 1226: // ER_USER_LIMIT_REACHED: only an account's connection limit frees within seconds
		if limitedResource(message) == "max_user_connections" {
			return Transient
		}
		return Rejected
	case 1053, // ER_SERVER_SHUTDOWN
		1927, // ER_CONNECTION_KILLED (MariaDB)
		4031: // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
		return Disconnected
	}
	return Rejected
}

// limitedResource returns the resource that a message of 1226 names: its
// last quoted text. The server quotes the user first and then the resource,
// which it names in English in every language of lc_messages; the user's
// name may read as a resource.
func limitedResource(message string) string {
	end := strings.LastIndexByte(message, '\'')
	if end < 0 {
		return ""
	}
	start := strings.LastIndexByte(message[:end], '\'')
	if start < 0 {
		return ""
	}
	return message[start+1 : end]
}

// Classify prepares the error of a single statement run on a *sql.DB (not
// in a transaction) for [backoff.Do], whose loop then retries what the
// table retries and nothing else:
//
//   - nil stays nil;
//   - an error matching driver.ErrBadConn, which database/sql has already
//     retried, comes back joined with [backoff.ErrRetriedBelow], so Do stops
//     at once (unless its Retrier has RetryInner);
//   - a Transient error comes back unchanged, and Do retries it;
//   - a Rejected error comes back wrapped with a method Retryable() that
//     reports false, so no loop retries it, an outer one neither;
//   - any other error, Disconnected (the statement may have been applied)
//     and Unrecognized, comes back marked by [backoff.Permanent].
//
// The error returned unwraps to err, so errors.Is and errors.As still find
// the driver's error. A statement that may safely run twice (a read, an
// upsert) can retry a Disconnected error too: test ClassOf itself. Classify
// is safe for concurrent use.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	if e := retriedBySQL(err); e != nil {
		return e
	}
	switch ClassOf(err) {
	case Transient:
		return err
	case Rejected:
		return &rejectedError{err: err}
	}
	return backoff.Permanent(err)
}

// rejectedError is an error that no retry loop retries, nested or not.
type rejectedError struct{ err error }

func (e *rejectedError) Error() string   { return e.err.Error() }
func (e *rejectedError) Unwrap() error   { return e.err }
func (e *rejectedError) Retryable() bool { return false }

// retriedBySQL returns err marked as retried already when it matches
// driver.ErrBadConn, which database/sql retries itself, and nil otherwise.
func retriedBySQL(err error) error {
	if errors.Is(err, driver.ErrBadConn) {
		return &retriedBelowError{err: err}
	}
	return nil
}

// retriedBelowError is an error that database/sql has already retried.
type retriedBelowError struct{ err error }

func (e *retriedBelowError) Error() string { return e.err.Error() }
func (e *retriedBelowError) Unwrap() []error {
	return []error{e.err, backoff.ErrRetriedBelow}
}

package backoffsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	sqlite3 "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mattn"
	modernc "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/modernc"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/mysql"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pgconn"
	"github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pq"
	pqold "github.com/backoffgo/backoff/backoffsql/internal/fakedrivers/pqold"
)

// The expected verdicts, each row citing its source, written from the
// sources independently of the classifier's switch statements.
var (
	// sqliteTransient: SQLite primary result codes BUSY, LOCKED, PROTOCOL.
	sqliteTransient = map[int]bool{5: true, 6: true, 15: true}

	pgA = "PostgreSQL 15 Appendix A / errcodes.txt"

	// pgTable: every SQLSTATE of the classes 08, 40, 53 and 57 in
	// PostgreSQL 15's errcodes.txt, and the codes of other classes that
	// are not Rejected or whose verdict needs a reason. Codes not listed
	// are Rejected, but for class 08's: Disconnected.
	pgTable = []struct {
		code, name string
		want       Class
		source     string
	}{
		{"08000", "connection_exception", Disconnected, pgA + ", class 08: the connection failed"},
		{"08003", "connection_does_not_exist", Disconnected, pgA + ", class 08"},
		{"08006", "connection_failure", Disconnected, pgA + ", class 08"},
		{"08001", "sqlclient_unable_to_establish_sqlconnection", Transient, pgA + ", class 08: no connection was made"},
		{"08004", "sqlserver_rejected_establishment_of_sqlconnection", Transient, pgA + ", class 08: no connection was made"},
		{"08007", "transaction_resolution_unknown", Disconnected, pgA + ", class 08"},
		{"08P01", "protocol_violation", Disconnected, pgA + ", class 08"},
		{"40000", "transaction_rollback", Rejected, pgA + ", class 40: the class's generic code names no cause that a new run cures"},
		{"40002", "transaction_integrity_constraint_violation", Rejected, pgA + ", class 40: a constraint, which fails again"},
		{"40001", "serialization_failure", Transient, pgA + ", class 40; docs 13.2 \"applications ... must be prepared to retry\""},
		{"40003", "statement_completion_unknown", Disconnected, pgA + ", class 40"},
		{"40P01", "deadlock_detected", Transient, pgA + ", class 40"},
		{"53000", "insufficient_resources", Rejected, pgA + ", class 53: an operator must free or add resources"},
		{"53100", "disk_full", Rejected, pgA + ", class 53"},
		{"53200", "out_of_memory", Rejected, pgA + ", class 53 (also \"out of shared memory\": max_locks_per_transaction)"},
		{"53300", "too_many_connections", Transient, pgA + ", class 53: a connection slot frees when another session ends"},
		{"53400", "configuration_limit_exceeded", Rejected, pgA + ", class 53: a configured limit"},
		{"57000", "operator_intervention", Rejected, pgA + ", class 57"},
		{"57014", "query_canceled", Rejected, pgA + ", class 57: statement_timeout or a cancel; the same limit stops it again"},
		{"57P01", "admin_shutdown", Disconnected, pgA + ", class 57: the server ends the session"},
		{"57P02", "crash_shutdown", Disconnected, pgA + ", class 57"},
		{"57P03", "cannot_connect_now", Transient, pgA + ", class 57: the server is starting or recovering"},
		{"57P04", "database_dropped", Rejected, pgA + ", class 57 (its FATAL in a transaction is Disconnected; BeginTx then fails)"},
		{"57P05", "idle_session_timeout", Disconnected, pgA + ", class 57: the server ends the session"},
		{"0A000", "feature_not_supported", Rejected, pgA + ", class 0A (the cached-plan case: TestClassOfCachedPlan)"},
		{"25P02", "in_failed_sql_transaction", Rejected, pgA + ", class 25: an earlier error, which fn did not return"},
		{"25P03", "idle_in_transaction_session_timeout", Disconnected, pgA + ", class 25: the server ends the session"},
		{"25P04", "transaction_timeout", Disconnected, "PostgreSQL 17 Appendix A, class 25: the server ends the session"},
		{"55P03", "lock_not_available", Transient, pgA + ", class 55: NOWAIT or lock_timeout; the lock frees"},
		{"72000", "snapshot_too_old", Transient, pgA + ", class 72: old_snapshot_threshold; a new run takes a new snapshot"},
	}
)

// pgCodes returns SQLSTATEs of every class in Appendix A, with the
// subclasses that occur there and a few that do not.
func pgCodes() []string {
	classes := strings.Fields("00 01 02 03 08 09 0A 0B 0F 0L 0P 0Z 20 21 22 23 24 25 26 27 28 2B 2D 2F " +
		"34 38 39 3B 3D 3F 40 42 44 53 54 55 57 58 72 F0 HV P0 XX")
	subs := strings.Fields("000 001 002 003 004 005 006 007 008 00B 00C 00F 01P P01 P02 P03 P04 505 030 014 11 0000")
	var codes []string
	for _, c := range classes {
		for _, s := range subs {
			codes = append(codes, c+s)
		}
	}
	for _, row := range pgTable {
		codes = append(codes, row.code)
	}
	return codes
}

func wantPG(code string) Class {
	if len(code) != 5 || code[:2] == "00" {
		return Unrecognized
	}
	for _, row := range pgTable {
		if row.code == code {
			return row.want
		}
	}
	if code[:2] == "08" { // a connection exception of a later version
		return Disconnected
	}
	return Rejected
}

// wraps returns err as the callers of a driver see it: as is, wrapped by
// fmt.Errorf, joined, and inside a *net.OpError-like chain.
func wraps(err error) map[string]error {
	return map[string]error{
		"bare":    err,
		"%w":      fmt.Errorf("transfer 42: %w", err),
		"%w %w":   fmt.Errorf("exec: %w", fmt.Errorf("stmt: %w", err)),
		"joined":  errors.Join(errors.New("rollback failed too"), err),
		"wrapped": &wrapper{err},
	}
}

type wrapper struct{ err error }

func (w *wrapper) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrapper) Unwrap() error { return w.err }

func TestClassOfPostgres(t *testing.T) {
	n := 0
	for _, code := range pgCodes() {
		want := wantPG(code)
		shapes := map[string]error{
			"pgconn.PgError":        &pgconn.PgError{Code: code, Message: "m"},
			"pq.Error":              &pq.Error{Code: pq.Code(code), Message: "m"},
			"pq.Error before v1.10": &pqold.Error{Code: pqold.ErrorCode(code), Message: "m"},
		}
		for shape, err := range shapes {
			for how, e := range wraps(err) {
				n++
				if got := ClassOf(e); got != want {
					t.Errorf("ClassOf(%s %s %q) = %v; want %v", how, shape, code, got, want)
				}
			}
		}
	}
	t.Logf("%d PostgreSQL errors classified", n)
}

func TestClassOfSQLite(t *testing.T) {
	n := 0
	for primary := 0; primary < 256; primary++ {
		want := Rejected
		switch {
		case primary == 0:
			want = Unrecognized
		case sqliteTransient[primary]:
			want = Transient
		}
		for ext := 0; ext < 40; ext++ {
			code := primary | ext<<8
			shapes := map[string]error{
				"modernc *sqlite.Error": modernc.New("m", code),
				"mattn sqlite3.Error":   sqlite3.Error{Code: sqlite3.ErrNo(primary), ExtendedCode: sqlite3.ErrNoExtended(code)},
				"mattn *sqlite3.Error":  &sqlite3.Error{Code: sqlite3.ErrNo(primary), ExtendedCode: sqlite3.ErrNoExtended(code)},
			}
			for shape, err := range shapes {
				for how, e := range wraps(err) {
					n++
					if got := ClassOf(e); got != want {
						t.Errorf("ClassOf(%s %s code %d) = %v; want %v", how, shape, code, got, want)
					}
				}
			}
		}
	}
	t.Logf("%d SQLite errors classified", n)
}

// mysqlTable: every MariaDB 10.11 error (sql/share/errmsg-utf8.txt, "MariaDB
// error reference") and MySQL 8 error ("MySQL 8.0 Server Error Message
// Reference") whose text says to retry or restart the transaction, the
// connection-count, lock and lost-session errors, and the errors whose
// text suggests a retry that would not cure them. Numbers not listed are
// Rejected.
var mysqlTable = []struct {
	number  uint16
	name    string
	message string // the English text, or a message as the server sends it
	want    Class
	source  string
}{
	{1020, "ER_CHECKREAD", "Record has changed since last read in table '%-.192s'", Transient, "MariaDB error reference; innodb_snapshot_isolation's conflict, which rolls back"},
	{1037, "ER_OUTOFMEMORY", "Out of memory; restart server and try again (needed %d bytes)", Rejected, "MariaDB error reference: the server must restart first"},
	{1040, "ER_CON_COUNT_ERROR", "Too many connections", Transient, "MariaDB error reference: max_connections; a slot frees when a session ends"},
	{1053, "ER_SERVER_SHUTDOWN", "Server shutdown in progress", Disconnected, "MariaDB error reference"},
	{1129, "ER_HOST_IS_BLOCKED", "Host '%-.64s' is blocked because of many connection errors; unblock with 'mariadb-admin flush-hosts'", Rejected, "MariaDB error reference: an operator must unblock"},
	{1180, "ER_ERROR_DURING_COMMIT", "Got error %M during COMMIT", Rejected, "MariaDB error reference: the engine's error, not said to be curable"},
	{1197, "ER_TRANS_CACHE_FULL", "Multi-statement transaction required more than 'max_binlog_cache_size' bytes of storage; increase this mariadbd variable and try again", Rejected, "MariaDB error reference: try again only after raising the variable"},
	{1203, "ER_TOO_MANY_USER_CONNECTIONS", "User %-.64s already has more than 'max_user_connections' active connections", Transient, "MariaDB error reference: the server's max_user_connections; a slot frees"},
	{1205, "ER_LOCK_WAIT_TIMEOUT", "Lock wait timeout exceeded; try restarting transaction", Transient, "MariaDB error reference"},
	{1206, "ER_LOCK_TABLE_FULL", "The total number of locks exceeds the lock table size", Rejected, "MariaDB error reference: InnoDB's lock memory (buffer pool); the same transaction needs it again"},
	{1213, "ER_LOCK_DEADLOCK", "Deadlock found when trying to get lock; try restarting transaction", Transient, "MariaDB error reference"},
	{1226, "ER_USER_LIMIT_REACHED", "User 'app' has exceeded the 'max_user_connections' resource (current value: 2)", Transient, "MariaDB error reference: the account's MAX_USER_CONNECTIONS; a slot frees"},
	{1226, "ER_USER_LIMIT_REACHED", "User 'app' has exceeded the 'max_questions' resource (current value: 100)", Rejected, "MariaDB error reference: MAX_QUERIES_PER_HOUR, reset hourly"},
	{1226, "ER_USER_LIMIT_REACHED", "User 'app' has exceeded the 'max_updates' resource (current value: 100)", Rejected, "MariaDB error reference: MAX_UPDATES_PER_HOUR, reset hourly"},
	{1226, "ER_USER_LIMIT_REACHED", "User 'app' has exceeded the 'max_connections_per_hour' resource (current value: 10)", Rejected, "MariaDB error reference: MAX_CONNECTIONS_PER_HOUR, reset hourly"},
	{1317, "ER_QUERY_INTERRUPTED", "Query execution was interrupted", Rejected, "MariaDB error reference: KILL QUERY, as PostgreSQL's 57014"},
	{1402, "ER_XA_RBROLLBACK", "XA_RBROLLBACK: Transaction branch was rolled back", Rejected, "MariaDB error reference: an XA branch, which RunTx never runs; its coordinator decides"},
	{1412, "ER_TABLE_DEF_CHANGED", "Table definition has changed, please retry transaction", Transient, "MariaDB error reference"},
	{1613, "ER_XA_RBTIMEOUT", "XA_RBTIMEOUT: Transaction branch was rolled back: took too long", Rejected, "MariaDB error reference: an XA branch"},
	{1614, "ER_XA_RBDEADLOCK", "XA_RBDEADLOCK: Transaction branch was rolled back: deadlock was detected", Rejected, "MariaDB error reference: an XA branch"},
	{1637, "ER_TOO_MANY_CONCURRENT_TRXS", "Too many active concurrent transactions", Transient, "MariaDB error reference: InnoDB's undo slots free as transactions end"},
	{1689, "ER_LOCK_ABORTED", "Wait on a lock was aborted due to a pending exclusive lock", Transient, "MariaDB error reference: the lock frees once the exclusive one is done"},
	{1799, "ER_INNODB_ONLINE_LOG_TOO_BIG", "Creating index '%-.192s' required more than 'innodb_online_alter_log_max_size' bytes of modification log. Please try again", Rejected, "MariaDB error reference: DDL, which fn must not run"},
	{1927, "ER_CONNECTION_KILLED", "Connection was killed", Disconnected, "MariaDB error reference"},
	{1969, "ER_STATEMENT_TIMEOUT", "Query execution was interrupted (max_statement_time exceeded)", Rejected, "MariaDB error reference: the same limit stops it again, as PostgreSQL's 57014"},
	{3024, "ER_QUERY_TIMEOUT", "Query execution was interrupted, maximum statement execution time exceeded", Rejected, "MySQL 8.0 Server Error Message Reference: max_execution_time, as 1969"},
	{3058, "ER_USER_LOCK_DEADLOCK", "Deadlock found when trying to get user-level lock; try rolling back transaction/releasing locks and restarting lock acquisition.", Rejected, "MariaDB error reference: GET_LOCK's locks belong to the session and outlive the rollback"},
	{3101, "ER_TRANSACTION_ROLLBACK_DURING_COMMIT", "Plugin instructed the server to rollback the current transaction.", Transient, "MySQL 8.0 Server Error Message Reference: a group replication conflict, rolled back at COMMIT"},
	{3572, "ER_LOCK_NOWAIT", "Statement aborted because lock(s) could not be acquired immediately and NOWAIT is set.", Transient, "MySQL 8.0 Server Error Message Reference: as PostgreSQL's 55P03"},
	{4031, "ER_CLIENT_INTERACTION_TIMEOUT", "The client was disconnected by the server because of inactivity.", Disconnected, "MySQL 8.0 Server Error Message Reference (MariaDB's 4031 is ER_REFERENCED_TRG_DOES_NOT_EXIST, from CREATE TRIGGER, which fn must not run)"},
	{4060, "ER_ROLLBACK_ONLY", "This transaction was rolled back and cannot be committed. ... Please restart another transaction.", Rejected, "MariaDB error reference (MyRocks): an earlier error, which fn did not return, as PostgreSQL's 25P02"},
}

func TestClassOfMySQL(t *testing.T) {
	listed := map[uint16]bool{}
	for _, row := range mysqlTable {
		listed[row.number] = true
		err := &mysql.MySQLError{Number: row.number, Message: row.message}
		for how, e := range wraps(err) {
			if got := ClassOf(e); got != row.want {
				t.Errorf("ClassOf(%s %d %s %q) = %v; want %v (%s)", how, row.number, row.name, row.message, got, row.want, row.source)
			}
		}
	}
	for number := 0; number <= 0xffff; number++ {
		if listed[uint16(number)] {
			continue
		}
		err := &mysql.MySQLError{Number: uint16(number), Message: "m"}
		if got := ClassOf(err); got != Rejected {
			t.Errorf("ClassOf(MySQLError %d) = %v; want Rejected (not in the table)", number, got)
		}
		if got := ClassOf(fmt.Errorf("tx: %w", err)); got != Rejected {
			t.Errorf("ClassOf(wrapped MySQLError %d) = %v; want Rejected (not in the table)", number, got)
		}
	}
}

// TestClassOfCachedPlan: of feature_not_supported (0A000), only the error
// of PostgreSQL's RevalidateCachedQuery (plancache.c: "cached plan must not
// change result type") is Transient, whatever language lc_messages gives
// its message; RunTx retries it once per call (TestRunTx's cached-plan rows).
func TestClassOfCachedPlan(t *testing.T) {
	const msg = "cached plan must not change result type"
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"pgx", &pgconn.PgError{Code: "0A000", Message: msg, Routine: "RevalidateCachedQuery"}, Transient},
		{"pgx, message in German", &pgconn.PgError{Code: "0A000", Message: "gecachter Plan darf den Ergebnistyp nicht ändern", Routine: "RevalidateCachedQuery"}, Transient},
		{"lib/pq", &pq.Error{Code: "0A000", Message: msg, Routine: "RevalidateCachedQuery"}, Transient},
		{"lib/pq before v1.10", &pqold.Error{Code: "0A000", Message: msg, Routine: "RevalidateCachedQuery"}, Transient},
		{"another feature not supported", &pgconn.PgError{Code: "0A000", Message: "FOR UPDATE is not allowed with aggregate functions", Routine: "CheckSelectLocking"}, Rejected},
		{"the text without the routine", &pgconn.PgError{Code: "0A000", Message: msg}, Rejected},
		{"the routine with another code", &pgconn.PgError{Code: "23505", Routine: "RevalidateCachedQuery"}, Rejected},
	} {
		for how, e := range wraps(tc.err) {
			if got := ClassOf(e); got != tc.want {
				t.Errorf("%s: ClassOf(%s %v) = %v; want %v", tc.name, how, tc.err, got, tc.want)
			}
		}
	}
}

// timeoutErr is a network error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// codeErr has a Code() int but is no SQLite error: its name is not Error.
type codeErr struct{}

func (codeErr) Error() string { return "HTTP 5" }
func (codeErr) Code() int     { return 5 }

func TestClassOfOthers(t *testing.T) {
	opErr := func(err error) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
	}
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, Unrecognized},
		{"plain", errors.New("insufficient funds"), Unrecognized},
		{"driver.ErrBadConn", driver.ErrBadConn, Disconnected},
		{"wrapped driver.ErrBadConn", fmt.Errorf("begin: %w", driver.ErrBadConn), Disconnected},
		{"go-sql-driver/mysql's ErrInvalidConn", fmt.Errorf("exec: %w", errors.New("invalid connection")), Disconnected},
		{"a plain error with another text", errors.New("invalid connection string"), Unrecognized},
		{"pgx's ErrTxCommitRollback: not a class", errors.New("commit unexpectedly resulted in rollback"), Unrecognized},
		{"io.EOF", io.EOF, Disconnected},
		{"io.ErrUnexpectedEOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), Disconnected},
		{"ECONNRESET", opErr(syscall.ECONNRESET), Disconnected},
		{"EPIPE", opErr(syscall.EPIPE), Disconnected},
		{"ECONNABORTED", opErr(syscall.ECONNABORTED), Disconnected},
		{"ECONNREFUSED", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, Transient},
		{"other errno", syscall.ENOENT, Unrecognized},
		{"network timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, Disconnected},
		{"pgx: nothing sent, it says", &pgconn.ConnError{Msg: "conn closed", Err: errors.New("conn closed"), Safe: true}, Disconnected},
		{"pgx: sent, then lost", &pgconn.ConnError{Msg: "failed to receive", Err: io.ErrUnexpectedEOF}, Disconnected},
		{"context.Canceled", context.Canceled, Unrecognized},
		{"context.DeadlineExceeded", fmt.Errorf("query: %w", context.DeadlineExceeded), Unrecognized},
		{"context error joined with a deadlock", errors.Join(context.Canceled, &pgconn.PgError{Code: "40P01"}), Unrecognized},
		{"backoff.Permanent over a deadlock", backoff.Permanent(&pgconn.PgError{Code: "40P01"}), Rejected},
		{"Retryable() true", &markedErr{true}, Transient},
		{"Retryable() false", &markedErr{false}, Rejected},
		{"a Retryable() method nearer than the code decides", &markedErr2{false, &pgconn.PgError{Code: "40001"}}, Rejected},
		{"Code() int on a type not named Error", codeErr{}, Unrecognized},
		{"nil *MySQLError", (*mysql.MySQLError)(nil), Unrecognized},
		{"the first code in the chain decides", fmt.Errorf("%w after %w", &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "40001"}), Rejected},
		{"a nested backoff.Error's last error", &backoff.Error{Reason: backoff.ErrExhausted, Err: errBusy, Attempts: 3}, Transient},
	}
	for _, tc := range tests {
		if got := ClassOf(tc.err); got != tc.want {
			t.Errorf("%s: ClassOf(%v) = %v; want %v", tc.name, tc.err, got, tc.want)
		}
	}
	for c, want := range map[Class]string{Unrecognized: "Unrecognized", Rejected: "Rejected", Transient: "Transient", Disconnected: "Disconnected", 9: "Class(invalid)"} {
		if c.String() != want {
			t.Errorf("Class(%d).String() = %q; want %q", int(c), c.String(), want)
		}
	}
}

// TestClassOfInTransaction: what RunTx adds to ClassOf inside a
// transaction (a FATAL ends the session) and for the calls it makes itself
// while the caller's context is alive (a deadline is a driver's own).
func TestClassOfInTransaction(t *testing.T) {
	tests := []struct {
		name                string
		err                 error
		driverTimeout, inTx bool
		want, wantClassOf   Class
	}{
		{"pgx FATAL, any code", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "XX000"}, true, true, Disconnected, Rejected},
		{"pgx FATAL, localized", &pgconn.PgError{Severity: "SCHWERWIEGEND", SeverityUnlocalized: "FATAL", Code: "XX000"}, true, true, Disconnected, Rejected},
		{"pgx ERROR", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "XX000"}, true, true, Rejected, Rejected},
		{"pgx PANIC", fmt.Errorf("exec: %w", &pgconn.PgError{Severity: "PANIC", Code: "XX000"}), true, true, Disconnected, Rejected},
		{"lib/pq FATAL", &pq.Error{Severity: "FATAL", Code: "XX000"}, true, true, Disconnected, Rejected},
		{"FATAL at login: by its code", &pgconn.PgError{Severity: "FATAL", Code: "28P01"}, true, false, Rejected, Rejected},
		{"FATAL marked Permanent", backoff.Permanent(&pgconn.PgError{Severity: "FATAL", Code: "XX000"}), true, true, Rejected, Rejected},
		{"deadline at BeginTx, the caller's context alive", fmt.Errorf("connect: %w", context.DeadlineExceeded), true, false, Disconnected, Unrecognized},
		{"deadline in fn or with the caller's context done", fmt.Errorf("connect: %w", context.DeadlineExceeded), false, true, Unrecognized, Unrecognized},
		{"cancellation, the caller's context alive", fmt.Errorf("query: %w", context.Canceled), true, true, Unrecognized, Unrecognized},
	}
	for _, tc := range tests {
		if got := classOf(tc.err, tc.driverTimeout, tc.inTx); got != tc.want {
			t.Errorf("%s: classOf(%v, driver timeout %v, in tx %v) = %v; want %v", tc.name, tc.err, tc.driverTimeout, tc.inTx, got, tc.want)
		}
		if got := ClassOf(tc.err); got != tc.wantClassOf {
			t.Errorf("%s: ClassOf(%v) = %v; want %v", tc.name, tc.err, got, tc.wantClassOf)
		}
	}
}

// TestClassOfAllocs: classifying the errors RunTx retries most allocates
// nothing.
func TestClassOfAllocs(t *testing.T) {
	for _, err := range []error{errSerialization, fmt.Errorf("tx: %w", errBusy), &pgconn.PgError{Severity: "FATAL", Code: "25P03"}, errCachedPlan,
		&mysql.MySQLError{Number: 1226, Message: "User 'app' has exceeded the 'max_user_connections' resource (current value: 2)"}} {
		if n := testing.AllocsPerRun(100, func() { _ = classOf(err, true, true) }); n != 0 {
			t.Errorf("classOf(%v) allocates %.0f times", err, n)
		}
	}
	for _, err := range []error{modernc.New("disk I/O error (1034)", 1034), sqlite3.Error{Code: 10, ExtendedCode: 1034}, errors.New("unexpected command tag ROLLBACK")} {
		if n := testing.AllocsPerRun(100, func() { _, _ = sqliteIOError(err), turnedIntoRollback(err) }); n != 0 {
			t.Errorf("the COMMIT outcome of %v allocates %.0f times to find", err, n)
		}
	}
}

type markedErr2 struct {
	retry bool
	err   error
}

func (e *markedErr2) Error() string   { return "marked: " + e.err.Error() }
func (e *markedErr2) Unwrap() error   { return e.err }
func (e *markedErr2) Retryable() bool { return e.retry }

// TestClassify runs one statement on the fake driver with backoff.Do, the
// way Classify is meant to be used, and counts the executions.
func TestClassify(t *testing.T) {
	policy := backoff.Must(backoff.NewExponential(backoff.Config{Base: time.Nanosecond, Cap: time.Nanosecond, MaxAttempts: 4}))
	tests := []struct {
		name   string
		err    error
		execs  int
		reason error
		outer  bool // an outer loop would retry the result
	}{
		{name: "busy twice, then done", err: errBusy, execs: 3},
		{name: "deadlock twice, then done", err: &mysql.MySQLError{Number: 1213}, execs: 3},
		{name: "unique violation", err: errUnique, execs: 1, reason: backoff.ErrPermanent},
		{name: "connection lost mid-statement: maybe applied", err: io.ErrUnexpectedEOF, execs: 1, reason: backoff.ErrPermanent, outer: true},
		{name: "caller's error", err: errFunds, execs: 1, reason: backoff.ErrPermanent, outer: true},
		{name: "bad connection: database/sql's three tries", err: driver.ErrBadConn, execs: 3, reason: backoff.ErrRetriedBelow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hook := failFirst(2, tc.err)
			if tc.reason != nil {
				hook = failFirst(1000, tc.err)
			}
			f := &fakeDB{onExec: hook}
			db := f.open()
			defer db.Close()
			err := backoff.Do(context.Background(), func(ctx context.Context) error {
				_, err := db.ExecContext(ctx, "UPDATE x")
				return Classify(err)
			}, policy)
			if _, _, execs, _, _ := f.counts(); execs != tc.execs {
				t.Errorf("%d executions; want %d", execs, tc.execs)
			}
			if tc.reason == nil {
				if err != nil {
					t.Errorf("Do = %v; want nil", err)
				}
				return
			}
			var be *backoff.Error
			if !errors.As(err, &be) || be.Reason != tc.reason || !errors.Is(err, tc.err) {
				t.Errorf("Do = %v; want reason %v and %v in the chain", err, tc.reason, tc.err)
			}
			if tc.reason == backoff.ErrPermanent && backoff.Retryable(err) != tc.outer {
				t.Errorf("Retryable(Do's error) = %v; want %v", !tc.outer, tc.outer)
			}
		})
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}

package integration

import (
	"fmt"
	"testing"

	"github.com/backoffgo/backoff/backoffsql"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lib/pq"
)

// TestDriverErrorTypes classifies the drivers' own error types, which the
// package reaches without importing them: if a driver renames a method or a
// field, this test fails. mattn/go-sqlite3, which needs cgo, has its own
// package (mattn/), and modernc.org/sqlite's errors are the real ones of the
// SQLite tests.
func TestDriverErrorTypes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want backoffsql.Class
	}{
		{"pgx serialization_failure", &pgconn.PgError{Code: "40001"}, backoffsql.Transient},
		{"pgx deadlock_detected", &pgconn.PgError{Code: "40P01"}, backoffsql.Transient},
		{"pgx unique_violation", &pgconn.PgError{Code: "23505"}, backoffsql.Rejected},
		{"pgx syntax_error", &pgconn.PgError{Code: "42601"}, backoffsql.Rejected},
		{"pgx admin_shutdown", &pgconn.PgError{Code: "57P01"}, backoffsql.Disconnected},
		{"lib/pq serialization_failure", &pq.Error{Code: "40001"}, backoffsql.Transient},
		{"lib/pq deadlock_detected", &pq.Error{Code: "40P01"}, backoffsql.Transient},
		{"lib/pq unique_violation", &pq.Error{Code: "23505"}, backoffsql.Rejected},
		{"mysql ER_LOCK_DEADLOCK", &mysql.MySQLError{Number: 1213}, backoffsql.Transient},
		{"mysql ER_LOCK_WAIT_TIMEOUT", &mysql.MySQLError{Number: 1205}, backoffsql.Transient},
		{"mysql ER_DUP_ENTRY", &mysql.MySQLError{Number: 1062}, backoffsql.Rejected},
		{"mysql ER_PARSE_ERROR", &mysql.MySQLError{Number: 1064}, backoffsql.Rejected},
		{"mysql ER_CHECKREAD", &mysql.MySQLError{Number: 1020}, backoffsql.Transient},
		{"mysql ErrInvalidConn", mysql.ErrInvalidConn, backoffsql.Disconnected},
		{"pgx idle_in_transaction_session_timeout", &pgconn.PgError{Severity: "FATAL", Code: "25P03"}, backoffsql.Disconnected},
		{"lib/pq idle_session_timeout", &pq.Error{Severity: "FATAL", Code: "57P05"}, backoffsql.Disconnected},
		{"pgx query_canceled (statement_timeout)", &pgconn.PgError{Code: "57014"}, backoffsql.Rejected},
		{"lib/pq in_failed_sql_transaction", &pq.Error{Code: "25P02"}, backoffsql.Rejected},
		{"pgx cached plan changed", &pgconn.PgError{Code: "0A000", Routine: "RevalidateCachedQuery"}, backoffsql.Transient},
		{"lib/pq cached plan changed", &pq.Error{Code: "0A000", Routine: "RevalidateCachedQuery"}, backoffsql.Transient},
		{"pgx feature_not_supported", &pgconn.PgError{Code: "0A000", Routine: "transformLockingClause"}, backoffsql.Rejected},
		{"mysql ER_TABLE_DEF_CHANGED", &mysql.MySQLError{Number: 1412}, backoffsql.Transient},
		{"mysql ER_CON_COUNT_ERROR", &mysql.MySQLError{Number: 1040}, backoffsql.Transient},
		{"mysql ER_USER_LIMIT_REACHED, connections", &mysql.MySQLError{Number: 1226, Message: "User 'a' has exceeded the 'max_user_connections' resource (current value: 1)"}, backoffsql.Transient},
		{"mysql ER_USER_LIMIT_REACHED, queries", &mysql.MySQLError{Number: 1226, Message: "User 'a' has exceeded the 'max_questions' resource (current value: 1)"}, backoffsql.Rejected},
	}
	for _, tc := range tests {
		for _, err := range []error{tc.err, fmt.Errorf("tx: %w", tc.err)} {
			if got := backoffsql.ClassOf(err); got != tc.want {
				t.Errorf("%s: ClassOf(%v) = %v; want %v", tc.name, err, got, tc.want)
			}
		}
	}
	// The sentinels that only their text tells apart: RunTx reads them at
	// COMMIT, and its tests on the real servers see them. The fields a
	// FATAL is read from must exist, or this does not compile (Routine and
	// Message are checked by the rows above).
	for _, err := range []error{pgx.ErrTxCommitRollback, pq.ErrInFailedTransaction} {
		if backoffsql.ClassOf(err) != backoffsql.Unrecognized {
			t.Errorf("ClassOf(%v) = %v; want Unrecognized (RunTx reads it at COMMIT)", err, backoffsql.ClassOf(err))
		}
	}
	_ = pgconn.PgError{SeverityUnlocalized: "FATAL"}
	_ = pq.Error{Severity: "FATAL"}
}

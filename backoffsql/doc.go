// Package backoffsql retries database transactions with the policies of
// package backoff: it runs the whole transaction again, from BEGIN, when the
// database rolled it back for a reason that running it again can cure, and it
// never repeats a COMMIT whose outcome is unknown unless told that doing so
// is harmless. It imports database/sql and no driver.
//
//	err := backoffsql.RunTx(ctx, db, &backoffsql.Options{
//		Tx: &sql.TxOptions{Isolation: sql.LevelSerializable},
//	}, func(ctx context.Context, tx *sql.Tx) error {
//		_, err := tx.ExecContext(ctx, `UPDATE account SET balance = balance - $1 WHERE id = $2`, amount, from)
//		return err
//	})
//	if errors.Is(err, backoffsql.ErrCommitUnknown) {
//		// the transfer may or may not have been applied: reconcile
//	}
//
// [Classify] gives the same verdicts to a single statement run on a *sql.DB
// with [backoff.Do].
//
// # Classification
//
// [ClassOf] reads the code that the common drivers put in their errors,
// through interfaces and field shapes rather than imports, and walks the
// error's chain (Unwrap) to find it. PostgreSQL codes are SQLSTATEs from
// any error with a method SQLState() string (pgx's *pgconn.PgError, lib/pq's
// *pq.Error; an older *pq.Error's Code field of type ErrorCode is read by
// reflection). SQLite codes come from a method Code() int on a type named
// Error (modernc.org/sqlite) or a field Code of type ErrNo (mattn/go-sqlite3),
// masked to the primary result code. MySQL and MariaDB numbers come from the
// field Number of a *MySQLError (go-sql-driver/mysql), and for 1226 the
// resource its field Message names (its last quoted text, which the server
// gives in English whatever lc_messages says). A PostgreSQL error's field Routine (the
// server's function that raised it) tells the cached-plan case of 0A000.
//
//	Database    Code                                  Class         Source
//	PostgreSQL  40001 serialization_failure           Transient     PostgreSQL 15 docs, Appendix A "Error Codes"
//	PostgreSQL  40P01 deadlock_detected               Transient     Appendix A
//	PostgreSQL  55P03 lock_not_available              Transient     Appendix A
//	PostgreSQL  53300 too_many_connections            Transient     Appendix A
//	PostgreSQL  57P03 cannot_connect_now              Transient     Appendix A
//	PostgreSQL  72000 snapshot_too_old                Transient     Appendix A; a new run takes a new snapshot
//	PostgreSQL  0A000 from RevalidateCachedQuery:     Transient     Appendix A; plancache.c (see below:
//	            "cached plan must not change result                 RunTx retries it once)
//	            type"
//	PostgreSQL  08001, 08004 (connection not made)    Transient     Appendix A, class 08
//	PostgreSQL  other 08xxx connection_exception      Disconnected  Appendix A, class 08
//	PostgreSQL  57P01 admin_shutdown, 57P02 crash_... Disconnected  Appendix A
//	PostgreSQL  57P05 idle_session_timeout, 25P03     Disconnected  Appendix A; the server ends the
//	            idle_in_transaction_session_timeout,                session (FATAL)
//	            25P04 transaction_timeout
//	PostgreSQL  40003 statement_completion_unknown    Disconnected  Appendix A
//	PostgreSQL  any other SQLSTATE (23xxx integrity,  Rejected      Appendix A (those of classes 40, 53
//	            42xxx syntax, 22xxx data, ...)                      and 57: below)
//	SQLite      5 SQLITE_BUSY and its extended codes  Transient     sqlite.org/rescode.html
//	SQLite      6 SQLITE_LOCKED and its extended      Transient     sqlite.org/rescode.html
//	SQLite      15 SQLITE_PROTOCOL (WAL lock race)    Transient     sqlite.org/rescode.html
//	SQLite      10 SQLITE_IOERR and its extended      Rejected      sqlite.org/rescode.html; at COMMIT an
//	                                                                unknown outcome (see below)
//	SQLite      any other (19 CONSTRAINT, 1 ERROR...) Rejected      sqlite.org/rescode.html
//	MySQL       1213 ER_LOCK_DEADLOCK                 Transient     MariaDB error reference
//	MySQL       1205 ER_LOCK_WAIT_TIMEOUT             Transient     MariaDB error reference
//	MySQL       1020 ER_CHECKREAD                     Transient     MariaDB error reference
//	MySQL       1412 ER_TABLE_DEF_CHANGED             Transient     MariaDB error reference ("please
//	                                                                retry transaction")
//	MySQL       1040 ER_CON_COUNT_ERROR, 1203         Transient     MariaDB error reference: a
//	            ER_TOO_MANY_USER_CONNECTIONS, 1226                  connection slot frees when a
//	            ER_USER_LIMIT_REACHED naming                        session ends
//	            'max_user_connections'
//	MySQL       1637 ER_TOO_MANY_CONCURRENT_TRXS      Transient     MariaDB error reference
//	MySQL       1689 ER_LOCK_ABORTED                  Transient     MariaDB error reference
//	MySQL       3572 ER_LOCK_NOWAIT, 3101             Transient     MySQL 8.0 Server Error Message
//	            ER_TRANSACTION_ROLLBACK_DURING_COMMIT               Reference
//	MySQL       1053 ER_SERVER_SHUTDOWN, 1927         Disconnected  MariaDB error reference; MySQL 8.0
//	            ER_CONNECTION_KILLED, 4031                          reference for 4031
//	            ER_CLIENT_INTERACTION_TIMEOUT
//	MySQL       any other number                      Rejected      MariaDB error reference, MySQL 8.0
//	                                                                reference (some: below)
//	any         ECONNREFUSED                          Transient     nothing reached the server
//	any         driver.ErrBadConn, io.EOF,            Disconnected  the connection broke during a call
//	            io.ErrUnexpectedEOF, ECONNRESET,                    (lib/pq returns ErrBadConn also
//	            EPIPE, ECONNABORTED, a Timeout() true               for a COMMIT it sent)
//	            error, go-sql-driver/mysql's
//	            ErrInvalidConn, SafeToRetry() true
//	            (pgx: see below)
//	any         a method Retryable() bool             its answer    package backoff's convention
//	any         context.Canceled, DeadlineExceeded    Unrecognized  the caller's or fn's own deadline
//	                                                                (RunTx: see below)
//
// "MariaDB error reference" is the server's sql/share/errmsg-utf8.txt
// (MariaDB 10.11), which the MariaDB documentation's error pages list; MySQL
// numbers below 1900 are the same. The package's unit tests pin every row,
// each citing its source, and every code of PostgreSQL's classes 08, 40, 53
// and 57 (TestClassOfPostgres, TestClassOfMySQL).
//
// Left Rejected, although their text or class speaks of a retry or of a
// rolled-back transaction, because running the transaction again at once
// does not cure them:
//
//   - PostgreSQL 40000 transaction_rollback (the class's generic code names
//     no cause) and 40002 transaction_integrity_constraint_violation (a
//     constraint fails again); 53000 insufficient_resources, 53100
//     disk_full, 53200 out_of_memory (also "out of shared memory": raise
//     max_locks_per_transaction) and 53400 configuration_limit_exceeded,
//     which an operator must cure; 57000 operator_intervention; 57014
//     query_canceled (statement_timeout, or a cancel: the same limit would
//     stop the statement again); 57P04 database_dropped (in a transaction
//     its FATAL is Disconnected, and the next BeginTx fails for good);
//     25P02 in_failed_sql_transaction (an earlier error, which fn did not
//     return, aborted the transaction); 0A000 feature_not_supported other
//     than the cached plan.
//   - MariaDB and MySQL 1037 ER_OUTOFMEMORY ("restart server and try
//     again") and 1197 ER_TRANS_CACHE_FULL ("increase this variable and
//     try again"): only after an operator acts; 1206 ER_LOCK_TABLE_FULL
//     (the same transaction needs as many locks again); 1226
//     ER_USER_LIMIT_REACHED for max_questions, max_updates (MariaDB names
//     them max_queries_per_hour, max_updates_per_hour) and
//     max_connections_per_hour (reset hourly); 1129 ER_HOST_IS_BLOCKED
//     (until FLUSH HOSTS); 1317 ER_QUERY_INTERRUPTED (KILL QUERY), 1969
//     ER_STATEMENT_TIMEOUT and MySQL's 3024 ER_QUERY_TIMEOUT, as
//     PostgreSQL's 57014; 3058 ER_USER_LOCK_DEADLOCK (GET_LOCK's locks
//     belong to the session and outlive the rollback); 1402, 1613 and 1614
//     ER_XA_RB* (XA branches, which RunTx does not run); 1799
//     ER_INNODB_ONLINE_LOG_TOO_BIG (DDL, which fn must not run); 4060
//     ER_ROLLBACK_ONLY (MyRocks: as PostgreSQL's 25P02); 1180
//     ER_ERROR_DURING_COMMIT (the engine's error, its outcome not said).
//     MariaDB's own 4031 is ER_REFERENCED_TRG_DOES_NOT_EXIST, from CREATE
//     TRIGGER, which fn must not run: the number is read as MySQL's.
//
// PostgreSQL answers a prepared statement whose result columns changed
// under it (another session added a column under a SELECT *) with 0A000
// "cached plan must not change result type", from plancache.c's
// RevalidateCachedQuery; the case is known by the error's field Routine
// (pgx, lib/pq), which lc_messages does not translate. pgx drops its
// cached statement on that error, so the next run prepares it afresh and
// succeeds; a statement prepared on the *sql.DB and used with tx.Stmt stays
// prepared on its connection, pgx's and lib/pq's alike, and fails every
// run. RunTx therefore retries it once per call: a second one in the same
// call is Rejected. ClassOf, which keeps no state, reports it as
// Transient, and a loop with [Classify] retries it as its policy allows.
//
// go-sql-driver/mysql's ErrInvalidConn is an errors.New value: it is known by
// its text, "invalid connection". RunTx adds two rules of its own. In a
// transaction (fn's statements and COMMIT), a PostgreSQL error of severity
// FATAL or PANIC (a field Severity or SeverityUnlocalized) is Disconnected,
// whatever its code, because the server has ended the session (when opening
// a connection it is not: a refused login is FATAL too). In the error of a
// call that RunTx makes itself, BeginTx or Commit, returned while the
// caller's context has not ended, an error holding context.DeadlineExceeded
// is the driver's own timeout (pgx's connect_timeout), Disconnected, not the
// caller's deadline: BeginTx is tried again, and such a COMMIT has an unknown
// outcome. In fn's error it stays Unrecognized and is not retried: a
// deadline there is fn's own (a sub-context fn made, work outside the
// database).
//
// At COMMIT, an SQLite I/O error (SQLITE_IOERR and its extended codes)
// leaves the outcome unknown, [ErrCommitUnknown], not [ErrNotCommitted]:
// after it SQLite may or may not have rolled the transaction back
// (sqlite.org/c3ref/get_autocommit.html), a commit written before the
// failing write or sync may stand, and neither modernc v1.62.0 nor mattn
// v1.14.53 says in its error which happened. lib/pq v1.12.3's "unexpected
// command tag ROLLBACK" is the server's answer that COMMIT rolled back:
// [ErrNotCommitted].
//
// MySQL's 1205 rolls back only the statement by default; RunTx rolls the
// whole transaction back before running it again. SQLite drivers (modernc
// v1.62.0, mattn v1.14.53) roll back a COMMIT that SQLITE_BUSY refused,
// and RunTx runs the transaction again; WAL mode with BEGIN IMMEDIATE
// avoids most of those conflicts. [Options.Classifier] plugs in any other
// driver: its verdict comes first, for database/sql's own errors too, and
// Unrecognized defers to the table.
//
// # What fn must not do
//
// fn must return every error that a statement returned, as it got it (or
// wrapping it). An error that fn swallows can leave a transaction that
// commits only part of fn's work: MySQL and MariaDB roll back only the
// statement that failed (or, for a deadlock, 1213, the whole transaction,
// after which fn's later statements run and commit on their own);
// PostgreSQL aborts the transaction and turns the COMMIT into a ROLLBACK,
// which RunTx reports as [ErrNotCommitted].
//
// On MySQL and MariaDB, fn must not run statements that commit implicitly
// (CREATE, ALTER, DROP, TRUNCATE, LOCK TABLES, ...): what ran before them
// is committed at once, and a retry would apply it again.
//
// fn must not call tx.Commit or tx.Rollback: RunTx then cannot know the
// outcome, and returns an error matching [ErrCommitUnknown] (and
// sql.ErrTxDone) that no loop retries.
//
// # Connection failures and driver.ErrBadConn
//
// pgx marks some connection errors SafeToRetry, meaning nothing was sent;
// they count as Disconnected all the same, because pgx v5.12.0 gives such
// an error ("conn closed") also for a COMMIT that it sent and the server
// applied, when the connection is cut before the answer arrives (the
// integration tests provoke it). lib/pq v1.12.3 does the same with
// driver.ErrBadConn.
//
// A connection that fails before COMMIT takes its transaction with it (the
// server rolls back what it had not committed), so RunTx runs the function
// again. A connection that fails during COMMIT leaves the outcome unknown:
// RunTx returns an error matching [ErrCommitUnknown] and does not run the
// function again, unless [Options.Idempotent] says a second run is harmless.
//
// database/sql itself retries driver.ErrBadConn wherever the driver
// guarantees nothing was sent: BeginTx, and statements on a *sql.DB, are
// tried up to three times (twice on pooled connections, once on a new one)
// before the error reaches the caller. To keep retries from multiplying,
// an ErrBadConn from BeginTx (unless [Options.Classifier] decides
// otherwise), or one passed to [Classify], is reported as an inner loop
// that already retried: the loop stops with [backoff.ErrRetriedBelow] (a
// Retrier with RetryInner retries anyway).
// Inside a transaction database/sql cannot retry (the transaction is bound
// to its connection), so there an ErrBadConn is a connection failure before
// COMMIT and the transaction runs again, on a new connection.
//
// A driver bounds how soon the context stops a statement. When the context
// ends, lib/pq v1.12.3 asks the server to cancel the statement and waits
// for the answer: during a network partition none comes, and RunTx returns
// only once the connection itself fails (TCP keepalive or retransmission
// limits), long after the deadline. pgx closes the connection at the
// deadline and returns then.
package backoffsql

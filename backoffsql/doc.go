// Package backoffsql retries database transactions with the policies of
// package backoff: [RunTx] runs the whole transaction again, from BEGIN,
// when the database rolled it back for a reason that running it again can
// cure, and it never repeats a COMMIT whose outcome is unknown unless
// [Options.Idempotent] says that doing so is harmless. It imports
// database/sql and no driver. Why each rule is so, and what each driver
// does, is in [docs/sql.md].
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
// [ClassOf] gives an error the [Class] of the first error in its chain that
// carries a database code or a connection failure, as the table says: a
// PostgreSQL SQLSTATE (pgx, lib/pq), an SQLite primary result code
// (modernc.org/sqlite, mattn/go-sqlite3) or a MySQL or MariaDB error number
// (go-sql-driver/mysql). A Transient error is retried, at COMMIT too; a
// Disconnected one runs the transaction again before COMMIT and leaves an
// unknown outcome at COMMIT; Rejected and Unrecognized ones are not retried.
//
//	Database    Code                                        Class
//	PostgreSQL  40001 serialization_failure                 Transient
//	PostgreSQL  40P01 deadlock_detected                     Transient
//	PostgreSQL  55P03 lock_not_available                    Transient
//	PostgreSQL  53300 too_many_connections                  Transient
//	PostgreSQL  57P03 cannot_connect_now                    Transient
//	PostgreSQL  72000 snapshot_too_old                      Transient
//	PostgreSQL  0A000 from RevalidateCachedQuery            Transient
//	            (a cached plan: RunTx retries it once)
//	PostgreSQL  08001, 08004 (connection not made)          Transient
//	PostgreSQL  other 08xxx connection_exception            Disconnected
//	PostgreSQL  57P01 admin_shutdown, 57P02 crash_shutdown  Disconnected
//	PostgreSQL  57P05, 25P03, 25P04 (session timeouts)      Disconnected
//	PostgreSQL  40003 statement_completion_unknown          Disconnected
//	PostgreSQL  any other SQLSTATE                          Rejected
//	SQLite      5 SQLITE_BUSY, extended codes included      Transient
//	SQLite      6 SQLITE_LOCKED, extended codes included    Transient
//	SQLite      15 SQLITE_PROTOCOL                          Transient
//	SQLite      10 SQLITE_IOERR (at COMMIT: unknown)        Rejected
//	SQLite      any other code                              Rejected
//	MySQL       1213 ER_LOCK_DEADLOCK                       Transient
//	MySQL       1205 ER_LOCK_WAIT_TIMEOUT                   Transient
//	MySQL       1020 ER_CHECKREAD                           Transient
//	MySQL       1412 ER_TABLE_DEF_CHANGED                   Transient
//	MySQL       1040, 1203, and 1226 if it names            Transient
//	            max_user_connections (connection slots)
//	MySQL       1637 ER_TOO_MANY_CONCURRENT_TRXS            Transient
//	MySQL       1689 ER_LOCK_ABORTED, 3572 ER_LOCK_NOWAIT   Transient
//	MySQL       3101 ER_TRANSACTION_ROLLBACK_DURING_COMMIT  Transient
//	MySQL       1053, 1927, 4031 (the session ended)        Disconnected
//	MySQL       any other number                            Rejected
//	any         ECONNREFUSED                                Transient
//	any         driver.ErrBadConn, io.EOF,                  Disconnected
//	            io.ErrUnexpectedEOF, ECONNRESET, EPIPE,
//	            ECONNABORTED, a Timeout() true error,
//	            go-sql-driver/mysql's ErrInvalidConn,
//	            pgx's SafeToRetry() true
//	any         a method Retryable() bool                   its answer
//	any         context.Canceled, DeadlineExceeded          Unrecognized
//
// RunTx adds two rules: in a transaction, a PostgreSQL error of severity
// FATAL or PANIC is Disconnected (the server ended the session); and in
// the error of its own BeginTx or Commit while ctx has not ended,
// context.DeadlineExceeded is the driver's own timeout, Disconnected.
// [Options.Classifier] plugs in any other driver.
//
// # What fn must do
//
// fn may run several times, each time in a new transaction: it must do its
// work through tx only and have no effect outside it (no messages sent, no
// counters outside the database, no state kept between runs but what it
// resets). It must return every error that a statement returned, as it got
// it or wrapping it: an error that fn swallows can leave a transaction that
// commits part of fn's work. It must not call tx.Commit or tx.Rollback
// (RunTx then returns an error matching [ErrCommitUnknown] that no loop
// retries), nor, on MySQL and MariaDB, run statements that commit
// implicitly (CREATE, ALTER, DROP, TRUNCATE, LOCK TABLES, ...): what ran
// before them would be committed at once, and applied again by a retry.
//
// [docs/sql.md]: https://github.com/backoffgo/backoff/blob/main/docs/sql.md
package backoffsql

// Package integration tests package backoffsql against real databases: a
// PostgreSQL server found through BACKOFF_PG_DSN, with pgx and lib/pq, a
// MariaDB (or MySQL) server found through BACKOFF_MYSQL_DSN, with
// go-sql-driver/mysql (.ci/databases starts both), and SQLite files with
// modernc.org/sqlite (here) and mattn/go-sqlite3 (package mattn, cgo). It
// is a module of its own so that the root module requires nothing. Without
// a DSN the tests of that server skip, saying so; under CI=true they fail
// instead.
package integration

// Package integration tests package backoffsql against real databases: a
// PostgreSQL server found through BACKOFF_PG_DSN (.ci/databases starts one)
// and SQLite through modernc.org/sqlite, pure Go. It is a module of its own
// so that the root module requires nothing. Without BACKOFF_PG_DSN the
// PostgreSQL tests skip, saying so; under CI=true they fail instead.
package integration

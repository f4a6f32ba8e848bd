//go:build cgo

// Package mattn tests backoffsql with github.com/mattn/go-sqlite3: its error
// type, and the SQLite tests that every SQLite driver runs. It is a package
// of its own because the driver needs cgo and about a minute of C
// compilation per build mode: .ci/databases runs it once, without the race
// detector.
package mattn

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/backoffgo/backoff/backoffsql"
	"github.com/backoffgo/backoff/backoffsql/integration/internal/sqlitecases"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// mattn is mattn/go-sqlite3 for the tests of package sqlitecases.
var mattn = sqlitecases.Driver{
	Name: "mattn",
	Open: func(t testing.TB, path string, wal, immediate bool) *sql.DB {
		t.Helper()
		dsn := "file:" + path + "?_busy_timeout=0&_journal_mode=DELETE"
		if wal {
			dsn = "file:" + path + "?_busy_timeout=0&_journal_mode=WAL"
		}
		if immediate {
			dsn += "&_txlock=immediate"
		}
		db, err := sql.Open("sqlite3", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		return db
	},
	Code: func(err error) int {
		var se sqlite3.Error
		if errors.As(err, &se) {
			return int(se.ExtendedCode)
		}
		return -1
	},
}

func TestMattnBusy(t *testing.T)       { sqlitecases.Busy(t, mattn) }
func TestMattnCommitBusy(t *testing.T) { sqlitecases.CommitBusy(t, mattn) }
func TestMattnRejected(t *testing.T)   { sqlitecases.Rejected(t, mattn) }

func TestMattnErrorType(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want backoffsql.Class
	}{
		{"SQLITE_BUSY", sqlite3.Error{Code: sqlite3.ErrBusy}, backoffsql.Transient},
		{"SQLITE_BUSY_SNAPSHOT", sqlite3.Error{Code: sqlite3.ErrBusy, ExtendedCode: sqlite3.ErrBusySnapshot}, backoffsql.Transient},
		{"SQLITE_LOCKED", sqlite3.Error{Code: sqlite3.ErrLocked}, backoffsql.Transient},
		{"SQLITE_PROTOCOL", sqlite3.Error{Code: sqlite3.ErrProtocol}, backoffsql.Transient},
		{"SQLITE_CONSTRAINT", sqlite3.Error{Code: sqlite3.ErrConstraint, ExtendedCode: sqlite3.ErrConstraintUnique}, backoffsql.Rejected},
		{"SQLITE_ERROR", sqlite3.Error{Code: sqlite3.ErrError}, backoffsql.Rejected},
	}
	for _, tc := range tests {
		for _, err := range []error{tc.err, fmt.Errorf("tx: %w", tc.err)} {
			if got := backoffsql.ClassOf(err); got != tc.want {
				t.Errorf("%s: ClassOf(%v) = %v; want %v", tc.name, err, got, tc.want)
			}
		}
	}
}

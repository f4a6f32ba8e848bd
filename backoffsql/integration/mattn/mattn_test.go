//go:build cgo

// Package mattn checks that backoffsql reads github.com/mattn/go-sqlite3's
// error type. It is a package of its own because the driver needs cgo and
// about a minute of C compilation per build mode: .ci/databases runs it
// once, without the race detector.
package mattn

import (
	"fmt"
	"testing"

	"github.com/backoffgo/backoff/backoffsql"
	sqlite3 "github.com/mattn/go-sqlite3"
)

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

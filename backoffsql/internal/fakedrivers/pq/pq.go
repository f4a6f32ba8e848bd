// Package pq mimics github.com/lib/pq v1.12's errors: a Code field and a
// SQLState method.
package pq

// Code is shaped like pqerror.Code.
type Code string

// Error is shaped like pq.Error.
type Error struct {
	Severity string
	Code     Code
	Message  string
	Routine  string
}

func (e *Error) Error() string { return "pq: " + e.Message }

// SQLState returns the SQLSTATE, as pq's does.
func (e *Error) SQLState() string { return string(e.Code) }

// Package pq mimics github.com/lib/pq before v1.10: a Code field of type
// ErrorCode and no SQLState method.
package pq

// ErrorCode is shaped like pq.ErrorCode.
type ErrorCode string

// Error is shaped like pq.Error.
type Error struct {
	Severity string
	Code     ErrorCode
	Message  string
	Routine  string
}

func (err *Error) Error() string { return "pq: " + err.Message }

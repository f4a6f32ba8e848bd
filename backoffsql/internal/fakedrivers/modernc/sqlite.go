// Package sqlite mimics modernc.org/sqlite's errors.
package sqlite

// Error is shaped like sqlite.Error.
type Error struct {
	msg  string
	code int
}

// New returns an *Error with a message and a (possibly extended) result code.
func New(msg string, code int) *Error { return &Error{msg: msg, code: code} }

func (e *Error) Error() string { return e.msg }

// Code returns the result code, as sqlite's does.
func (e *Error) Code() int { return e.code }

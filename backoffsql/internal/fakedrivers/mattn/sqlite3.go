// Package sqlite3 mimics github.com/mattn/go-sqlite3's errors: a value type
// Error with a Code field of type ErrNo and no method for it.
package sqlite3

// ErrNo is shaped like sqlite3.ErrNo.
type ErrNo int

// ErrNoExtended is shaped like sqlite3.ErrNoExtended.
type ErrNoExtended int

// Error is shaped like sqlite3.Error.
type Error struct {
	Code         ErrNo
	ExtendedCode ErrNoExtended
	err          string
}

func (err Error) Error() string {
	if err.err != "" {
		return err.err
	}
	return "sqlite3 error"
}

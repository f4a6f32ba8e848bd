package benchmarks

import (
	"context"
	"testing"

	backoff "github.com/backoffgo/backoff"
)

// one-switch variant of judge for a plain error (estimate only)
func judgeOneSwitch(err error) bool {
	for err != nil {
		if err == context.Canceled || err == context.DeadlineExceeded {
			return false
		}
		switch e := err.(type) {
		case *backoff.PermanentError:
			return false
		case *backoff.Error:
			return judgeOneSwitch(e.Err)
		case interface{ Retryable() bool }:
			return e.Retryable()
		case interface{ Is(error) bool }:
			if e.Is(context.Canceled) || e.Is(context.DeadlineExceeded) {
				return false
			}
			if u, ok := err.(interface{ Unwrap() error }); ok {
				err = u.Unwrap()
				continue
			}
			return true
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			return true
		default:
			return true
		}
	}
	return true
}

var boolSink bool

func BenchmarkZZJudge(b *testing.B) {
	b.Run("Retryable", func(b *testing.B) {
		for b.Loop() {
			boolSink = backoff.Retryable(ErrFail)
		}
	})
	b.Run("OneSwitch", func(b *testing.B) {
		for b.Loop() {
			boolSink = judgeOneSwitch(ErrFail)
		}
	})
}

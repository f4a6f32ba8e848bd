package benchmarks

import (
	"math/rand/v2"
	"testing"
	"time"

	backoff "github.com/backoffgo/backoff"
)

func BenchmarkZZ(b *testing.B) {
	p := newOurs(Base, Cap, backoff.Unlimited)
	var acc time.Duration
	b.Run("NextDelay-ErrFail-cycle", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			if n > 10 {
				n = 1
			}
			d, _ := p.NextDelay(n, ErrFail)
			acc += d
		}
	})
	b.Run("NextDelay-nil-cycle", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			if n > 10 {
				n = 1
			}
			d, _ := p.NextDelay(n, nil)
			acc += d
		}
	})
	b.Run("NextDelay-ErrFail-fixed5", func(b *testing.B) {
		for b.Loop() {
			d, _ := p.NextDelay(5, ErrFail)
			acc += d
		}
	})
	b.Run("NextDelay-ErrFail-1e6", func(b *testing.B) {
		for b.Loop() {
			d, _ := p.NextDelay(1e6, ErrFail)
			acc += d
		}
	})
	b.Run("Retryable-ErrFail", func(b *testing.B) {
		for b.Loop() {
			if !backoff.Retryable(ErrFail) {
				b.Fatal()
			}
		}
	})
	var r backoff.Rng = backoff.RuntimeRng{}
	b.Run("RuntimeRng-Int64N-iface", func(b *testing.B) {
		var a int64
		for b.Loop() {
			a += r.Int64N(int64(Cap) + 1)
		}
		acc += time.Duration(a)
	})
	b.Run("rand.Int64N-cycle", func(b *testing.B) {
		var a int64
		n := 0
		for b.Loop() {
			n++
			if n > 10 {
				n = 1
			}
			a += rand.Int64N(int64(Base)<<(n-1) + 1)
		}
		acc += time.Duration(a)
	})
	b.Run("rand.Int64N-cap", func(b *testing.B) {
		var a int64
		for b.Loop() {
			a += rand.Int64N(int64(Cap) + 1)
		}
		acc += time.Duration(a)
	})
	b.Run("rand.Float64", func(b *testing.B) {
		var a float64
		for b.Loop() {
			a += rand.Float64()
		}
		acc += time.Duration(a)
	})
	b.Run("rand.Uint64", func(b *testing.B) {
		var a uint64
		for b.Loop() {
			a += rand.Uint64()
		}
		acc += time.Duration(a)
	})
	sink.Add(int64(acc))
}

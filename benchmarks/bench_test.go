package benchmarks

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

var sink atomic.Int64

func forEach(b *testing.B, f func(b *testing.B, a Adapter)) {
	for _, a := range Adapters() {
		b.Run("lib="+a.Name(), func(b *testing.B) {
			b.ReportAllocs()
			f(b, a)
		})
	}
}

// BenchmarkDelay: one delay, attempts cycling 1..10 (one retry sequence
// every 10 delays; stateful libraries reset or rebuild their object then,
// and that cost is spread over the 10 delays). allocs/op is rounded down by
// the testing package, so allocs per 10-delay sequence are reported too.
func BenchmarkDelay(b *testing.B) {
	forEach(b, func(b *testing.B, a Adapter) {
		seq := a.NewSeq(Base, Cap)
		var acc time.Duration
		n := 0
		for b.Loop() {
			n++
			if n > 10 {
				n = 1
			}
			acc += seq.Delay(n)
		}
		sink.Add(int64(acc))
		s2 := a.NewSeq(Base, Cap)
		b.ReportMetric(testing.AllocsPerRun(200, func() {
			for n := 1; n <= 10; n++ {
				acc += s2.Delay(n)
			}
		}), "allocs/10delays")
	})
}

// BenchmarkDelayAt1e6: one delay at attempt 10^6 (stateful libraries are
// stepped there first and then advance by one per iteration, i.e. attempt
// 10^6+i, which for every library here costs the same as 10^6).
func BenchmarkDelayAt1e6(b *testing.B) {
	forEach(b, func(b *testing.B, a Adapter) {
		seq := a.NewSeq(Base, Cap)
		const at = 1_000_000
		seq.Delay(at)
		var acc time.Duration
		i := at
		for b.Loop() {
			i++
			acc += seq.Delay(i)
		}
		sink.Add(int64(acc))
	})
}

// BenchmarkRetrySuccess: the library's retry loop when the operation
// succeeds at once (policy 100ms/10s, 10 attempts).
func BenchmarkRetrySuccess(b *testing.B) {
	forEach(b, func(b *testing.B, a Adapter) {
		op := &Op{}
		run := a.NewRetrier(op, Base, Cap, 10)
		ctx := context.Background()
		for b.Loop() {
			op.Reset()
			if err := run(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRetryFail5: the loop with 5 failures, then success, with the
// smallest delays each library allows (1ns, or 0 where the mapping gives 0).
func BenchmarkRetryFail5(b *testing.B) {
	forEach(b, func(b *testing.B, a Adapter) {
		op := &Op{Fail: 5}
		run := a.NewRetrier(op, tiny, tiny, 10)
		ctx := context.Background()
		for b.Loop() {
			op.Reset()
			if err := run(ctx); err != nil || op.Calls != 6 {
				b.Fatal(err, op.Calls)
			}
		}
	})
}

// BenchmarkDelayShared: one policy object shared by parallel goroutines
// (GOMAXPROCS of them), each asking it for delays (attempt hint 1..10).
// cenkalti's objects are documented as unsafe for this (see the race probe).
func BenchmarkDelayShared(b *testing.B) {
	forEach(b, func(b *testing.B, a Adapter) {
		delay := a.NewShared(Base, Cap)
		b.RunParallel(func(pb *testing.PB) {
			var acc time.Duration
			n := 0
			for pb.Next() {
				n++
				if n > 10 {
					n = 1
				}
				acc += delay(n)
			}
			sink.Add(int64(acc))
		})
	})
}

package sim

import "testing"

func BenchmarkSweepQ(b *testing.B) {
	c := DefaultContention()
	c.Clients = Sweep(10, 190, 10)
	for b.Loop() {
		Contention(c, Brooker(), 1)
	}
}
